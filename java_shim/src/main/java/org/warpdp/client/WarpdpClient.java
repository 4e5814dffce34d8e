package org.warpdp.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntToLongFunction;

import org.warpdp.client.spi.Transport;
import org.warpdp.client.spi.Transports;

/**
 * Client of a warpdp server for JVM tools, using only plain Java types (gRPC stays private to the jar).
 *
 * <pre>{@code
 * try (WarpdpClient client = WarpdpClient.connect("127.0.0.1:50051")) {
 *     System.out.println(client.serverInfo().summary());
 *     PairHmmBatches job = PairHmmBatches.builder()
 *             .addHaplotype(hap).addRead(bases, quals, ins, del, gcp).endBatch()
 *             .build();
 *     double[] log10 = client.pairHmm(job, false);
 *
 *     XdropPairs seeds = XdropPairs.builder().add(h, hPos, v, vPos).build();
 *     XdropResults x = client.xdrop(seeds, XdropParams.of(17, 100));     // x.score()[i], x.beginH()[i], ...
 *
 *     SeedExtPairs ext = SeedExtPairs.builder().add(query, target, h0).build();
 *     SeedExtResults s = client.seedExtend(ext, SeedExtParams.BWA_MEM);  // s.score()[i], s.qle()[i], ...
 *
 *     QueryTargetPairs pairs = QueryTargetPairs.builder().add(query, target).build();
 *     AlignResults a = client.align(pairs, AlignParams.of(AlignParams.Mode.LOCAL).withCigar(true));
 *     EditResults e = client.edit(pairs, EditParams.of(EditParams.Mode.HW).withTask(EditParams.Task.PATH));
 * }
 * }</pre>
 *
 * <p>Thread-safe; one client (one channel) serves any number of threads. Jobs larger than the server's
 * limits (or {@link ClientOptions#maxCellsPerRequest()}) are split into several requests
 * ({@link ChunkPlanner}) streamed in one {@code <Algorithm>Stream} call per server. Calls that fail with
 * UNAVAILABLE are retried {@link ClientOptions#retries()} times by gRPC itself (a service-config retry policy
 * of the channel; see {@code GrpcTransport}). Results are exactly those of warpdp's Python
 * API for the same input on the server's backend.
 *
 * <p>Each algorithm has the same pattern: a packed input class ({@link PairHmmBatches}, {@link XdropPairs},
 * {@link SeedExtPairs}, {@link QueryTargetPairs} for align and edit), a method on {@link Transport} and its gRPC implementation, and a method here that
 * plans the requests.
 */
public final class WarpdpClient implements AutoCloseable {
    /** The gRPC service name, as registered with the server's health service. */
    public static final String SERVICE = "warpdp.v1.Warpdp";

    // Jobs this small go out without asking the server for its limits (any sane server accepts them).
    private static final long SAFE_CELLS = 64_000_000L;
    private static final long SAFE_BYTES = 3L << 20;
    // A job that must be split goes in chunks of at most this size, so sending overlaps computing.
    private static final long CHUNK_BYTES = 16L << 20;
    // gRPC's default message limit, assumed when a server does not say.
    private static final long DEFAULT_MESSAGE_BYTES = 4L << 20;
    // Six int64 result columns per pair in an X-drop or seed-extension reply; an upper bound of the
    // framing (tags, lengths, parameters, the offsets' leading 0) around a request's arrays.
    private static final long PAIR_REPLY_BYTES = 48;
    private static final long FRAMING_BYTES = 256;
    /** Longest sequence of an edit job: a CIGAR run holds 28 bits. */
    public static final long MAX_EDIT_LENGTH = (1L << 28) - 1;

    private final ClientOptions options;
    private final Transport transport;
    private final AtomicLong requestsSent = new AtomicLong();
    private volatile ServerInfo serverInfo;

    private WarpdpClient(ClientOptions options, Transport transport) {
        this.options = options;
        this.transport = transport;
    }

    /** A client for these options. Connecting happens on the first call, so this does not fail when the
     * server is down; {@link #isServing()} tells. */
    public static WarpdpClient connect(ClientOptions options) {
        return new WarpdpClient(options, Transports.open(options));
    }

    public static WarpdpClient connect(String address) {
        return connect(ClientOptions.of(address));
    }

    /** A client configured by {@code warpdp.*} system properties / {@code WARPDP_*} variables. */
    public static WarpdpClient connect() {
        return connect(ClientOptions.fromEnvironment());
    }

    public ClientOptions options() {
        return options;
    }

    /**
     * The server's health status for the warpdp service ("SERVING" when it takes calls), from the standard
     * {@code grpc.health.v1} service. Throws {@link WarpdpException} when the server cannot be reached.
     */
    public String health() {
        try {
            return transport.health(SERVICE, options.connectTimeoutMillis());
        } catch (WarpdpException e) {
            if ("NOT_FOUND".equals(e.code())) { // a server that only reports its overall status
                return transport.health("", options.connectTimeoutMillis());
            }
            throw e;
        }
    }

    /** Whether the server is reachable and serving; never throws. */
    public boolean isServing() {
        try {
            return "SERVING".equals(health());
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Asks the server (and remembers its limits for splitting jobs). */
    public ServerInfo serverInfo() {
        ServerInfo info = transport.serverInfo(options.connectTimeoutMillis());
        serverInfo = info;
        return info;
    }

    /** Log10 likelihoods of the job: batch after batch, read-major inside a batch. */
    public double[] pairHmm(PairHmmBatches job, boolean useDouble) {
        double[] out = new double[Math.toIntExact(job.nPairs())];
        pairHmm(job, useDouble, out, 0);
        return out;
    }

    /**
     * Like {@link #pairHmm(PairHmmBatches, boolean)}, writing the {@code job.nPairs()} results to {@code out}
     * from {@code offset}.
     *
     * @param useDouble compute every pair in double precision (GATK's
     *                  {@code --native-pair-hmm-use-double-precision}); otherwise float with GKL's
     *                  double-precision recomputation of pairs below 1e-28
     */
    public void pairHmm(PairHmmBatches job, boolean useDouble, double[] out, int offset) {
        long pairs = job.nPairs();
        if (offset < 0 || offset + pairs > out.length) {
            throw new IllegalArgumentException("the output array has " + out.length + " values; " + pairs
                    + " results from offset " + offset + " do not fit");
        }
        if (pairs == 0) {
            return;
        }
        List<PairHmmBatches> requests = plan(job);
        requestsSent.addAndGet(requests.size());
        transport.pairHmm(requests, useDouble, out, offset, options.deadlineMillis());
    }

    /**
     * Gapped X-drop extension of every pair (SeqAn 2 / BELLA / LOGAN semantics), as Python's
     * {@code warpdp.xdrop(pairs, k=..., x=..., match=..., mismatch=..., gap=..., report=...)} returns it.
     * Seeds outside their sequences throw {@link IllegalArgumentException} here; other bad input (a byte that
     * is not A, C, G, T or N) fails on the server with INVALID_ARGUMENT naming the pair.
     */
    public XdropResults xdrop(XdropPairs pairs, XdropParams params) {
        pairs.checkSeeds(params.k());
        XdropResults out = XdropResults.allocate(pairs.nPairs());
        runPairs(pairs, pairs.nPairs(), i -> params.cells(pairs, i), pairs::requestBytes, pairs::select,
                requests -> transport.xdrop(requests, params, out, 0, options.deadlineMillis()));
        return out;
    }

    /** Seed extension with BWA-MEM's defaults ({@link SeedExtParams#BWA_MEM}). */
    public SeedExtResults seedExtend(SeedExtPairs pairs) {
        return seedExtend(pairs, SeedExtParams.BWA_MEM);
    }

    /**
     * Seed extension of every pair with ksw_extend2's semantics, as Python's {@code warpdp.seed_extend} returns
     * it. A pair whose best possible score exceeds {@link SeedExtPairs#MAX_SCORE} fails on the server with
     * INVALID_ARGUMENT.
     */
    public SeedExtResults seedExtend(SeedExtPairs pairs, SeedExtParams params) {
        SeedExtResults out = SeedExtResults.allocate(pairs.nPairs());
        runPairs(pairs, pairs.nPairs(), i -> params.cells(pairs, i), pairs::requestBytes, pairs::select,
                requests -> transport.seedExtend(requests, params, out, 0, options.deadlineMillis()));
        return out;
    }

    /**
     * Alignment of every pair, as Python's {@code warpdp.align(pairs, params)} returns it (CIGARs with
     * {@code params.cigar()} or in GATK mode). Pairs too long for the server's int32 scores throw
     * {@link IllegalArgumentException} here; bytes are ASCII bases (other bytes score as N).
     */
    public AlignResults align(QueryTargetPairs pairs, AlignParams params) {
        for (int i = 0; i < pairs.nPairs(); i++) {
            params.checkLengths(i, pairs.queryLength(i), pairs.targetLength(i));
        }
        AlignResults out = AlignResults.allocate(pairs.nPairs(), params.traceback());
        // Reply: five int64 columns, and a CIGAR of at most query + target + 2 ops (4 bytes) and its offset.
        IntToLongFunction bytes = params.traceback()
                ? i -> pairs.requestBytes(i) + 4 * (pairs.queryLength(i) + pairs.targetLength(i) + 2) + 8
                : pairs::requestBytes;
        runPairs(pairs, pairs.nPairs(), pairs::cells, bytes, pairs::select,
                requests -> transport.align(requests, params, out, 0, options.deadlineMillis()));
        return out;
    }

    /** Alignment with the default parameters ({@link AlignParams#DEFAULT}). */
    public AlignResults align(QueryTargetPairs pairs) {
        return align(pairs, AlignParams.DEFAULT);
    }

    /**
     * Edit distance of every pair, as Python's {@code warpdp.edit(pairs, params)} returns it. Sequences
     * longer than {@link #MAX_EDIT_LENGTH} throw {@link IllegalArgumentException}; the windowed method's
     * bases must be A, C, G, T (else INVALID_ARGUMENT from the server, naming the pair).
     */
    public EditResults edit(QueryTargetPairs pairs, EditParams params) {
        if (pairs.longest() > MAX_EDIT_LENGTH) {
            throw new IllegalArgumentException("a sequence of " + pairs.longest() + " bases is longer than "
                    + MAX_EDIT_LENGTH + " (the CIGAR's run limit)");
        }
        EditResults out = EditResults.allocate(pairs.nPairs(), params);
        // Reply: three columns, at most one CIGAR op per base and one location per target base (+1).
        IntToLongFunction bytes = i -> pairs.requestBytes(i) + 4 * (pairs.queryLength(i) + pairs.targetLength(i))
                + 16 * (pairs.targetLength(i) + 1) + 16;
        runPairs(pairs, pairs.nPairs(), pairs::cells, bytes, pairs::select,
                requests -> transport.edit(requests, params, out, 0, options.deadlineMillis()));
        return out;
    }

    /** Edit distance with the default parameters ({@link EditParams#DEFAULT}). */
    public EditResults edit(QueryTargetPairs pairs) {
        return edit(pairs, EditParams.DEFAULT);
    }

    /** Request messages sent so far (more than the calls when jobs were split). */
    public long requestsSent() {
        return requestsSent.get();
    }

    private List<PairHmmBatches> plan(PairHmmBatches job) {
        long ownCells = ownCellLimit();
        if (job.cells() <= Math.min(ownCells, SAFE_CELLS) && job.requestBytes() <= SAFE_BYTES
                && 8 * job.nPairs() <= SAFE_BYTES) {
            return List.of(job);
        }
        long[] limits = serverLimits();
        long maxCells = limits[0];
        long maxBytes = limits[1];
        if (job.cells() <= maxCells && job.requestBytes() <= maxBytes && 8 * job.nPairs() <= maxBytes) {
            return List.of(job);
        }
        return ChunkPlanner.plan(job, maxCells, Math.min(maxBytes, CHUNK_BYTES));
    }

    /**
     * A job of {@code n} independent pairs: planned into requests within the limits ({@code cellsOf} and
     * {@code requestBytesOf} per pair), then sent by {@code send}. Nothing to do for no pairs.
     */
    private <J> void runPairs(J job, int n, IntToLongFunction cellsOf, IntToLongFunction requestBytesOf,
                              PairSelector<J> select, Consumer<List<J>> send) {
        if (n == 0) {
            return;
        }
        long[] cells = new long[n];
        long[] bytes = new long[n];
        for (int i = 0; i < n; i++) {
            cells[i] = cellsOf.applyAsLong(i);
            bytes[i] = requestBytesOf.applyAsLong(i) + PAIR_REPLY_BYTES;
        }
        List<J> requests = planPairs(job, cells, bytes, select);
        requestsSent.addAndGet(requests.size());
        send.accept(requests);
    }

    /** Ranges of consecutive pairs within the limits, each selected as one request (the job when it fits). */
    private <J> List<J> planPairs(J job, long[] cells, long[] bytes, PairSelector<J> select) {
        long totalCells = 0;
        long totalBytes = FRAMING_BYTES;
        for (int i = 0; i < cells.length; i++) {
            totalCells += cells[i];
            totalBytes += bytes[i];
        }
        if (totalCells <= Math.min(ownCellLimit(), SAFE_CELLS) && totalBytes <= SAFE_BYTES) {
            return List.of(job);
        }
        long[] limits = serverLimits();
        if (totalCells <= limits[0] && totalBytes <= limits[1]) {
            return List.of(job);
        }
        List<J> requests = new ArrayList<>();
        long budget = Math.max(1, Math.min(limits[1], CHUNK_BYTES) - FRAMING_BYTES);
        for (int[] range : ChunkPlanner.pairRanges(cells, bytes, limits[0], budget)) {
            requests.add(select.select(range[0], range[1]));
        }
        return requests;
    }

    @FunctionalInterface
    private interface PairSelector<J> {
        J select(int from, int to);
    }

    private long ownCellLimit() {
        return options.maxCellsPerRequest() > 0 ? options.maxCellsPerRequest() : Long.MAX_VALUE;
    }

    /** {max cells, max bytes} per request: the server's limits (asked once), and our own cell limit. */
    private long[] serverLimits() {
        ServerInfo info = serverInfo != null ? serverInfo : serverInfo();
        long maxCells = Math.min(ownCellLimit(), info.maxRequestCells() > 0 ? info.maxRequestCells() : Long.MAX_VALUE);
        long maxBytes = info.maxMessageBytes() > 0 ? info.maxMessageBytes() : DEFAULT_MESSAGE_BYTES;
        return new long[] {maxCells, maxBytes};
    }

    /** Shuts the channel down. */
    @Override
    public void close() {
        transport.close();
    }

    @Override
    public String toString() {
        return "WarpdpClient[" + options.target() + "]";
    }
}
