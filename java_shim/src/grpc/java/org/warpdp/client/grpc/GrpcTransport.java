package org.warpdp.client.grpc;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLException;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;

import io.grpc.EquivalentAddressGroup;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.util.internal.logging.InternalLoggerFactory;
import io.grpc.netty.shaded.io.netty.util.internal.logging.JdkLoggerFactory;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;

import org.warpdp.client.AlignParams;
import org.warpdp.client.AlignResults;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.EditParams;
import org.warpdp.client.EditResults;
import org.warpdp.client.QueryTargetPairs;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.SeedExtPairs;
import org.warpdp.client.SeedExtParams;
import org.warpdp.client.SeedExtResults;
import org.warpdp.client.ServerInfo;
import org.warpdp.client.WarpdpException;
import org.warpdp.client.XdropPairs;
import org.warpdp.client.XdropParams;
import org.warpdp.client.XdropResults;
import org.warpdp.client.spi.Transport;
import org.warpdp.v1.PairHmmReply;
import org.warpdp.v1.PairHmmRequest;
import org.warpdp.v1.SeedExtendReply;
import org.warpdp.v1.SeedExtendRequest;
import org.warpdp.v1.ServerInfoReply;
import org.warpdp.v1.ServerInfoRequest;
import org.warpdp.v1.WarpdpGrpc;
import org.warpdp.v1.XdropReply;
import org.warpdp.v1.XdropReport;
import org.warpdp.v1.XdropRequest;

/** {@link Transport} over a gRPC (netty) channel. In warpdp-gatk.jar gRPC, netty and protobuf are relocated
 * under {@code org.warpdp.shaded}, so these imports never meet an application's own copies. */
public final class GrpcTransport implements Transport {
    static {
        // Netty would otherwise pick up whatever logging framework the application has (log4j, slf4j).
        InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE);
    }

    private static final String LIST_SCHEME = "warpdp-list";
    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final ManagedChannel channel;
    private final String target;
    private final int servers;
    // Made once: a call per alignment (GATK's Smith-Waterman) should not rebuild them; a deadline makes a copy.
    private final WarpdpGrpc.WarpdpBlockingStub blockingStub;
    private final WarpdpGrpc.WarpdpStub asyncStub;

    public GrpcTransport(ClientOptions options) {
        this.target = options.target();
        List<String> addresses = options.addresses();
        NettyChannelBuilder builder;
        if (addresses.size() == 1) {
            builder = NettyChannelBuilder.forTarget(addresses.get(0));
            // A dns:/// target may name several servers: spread calls over all of them.
            if (addresses.get(0).contains(":///")) {
                builder.defaultLoadBalancingPolicy("round_robin");
            }
        } else {
            builder = listChannel(addresses);
        }
        this.servers = addresses.size();
        if (options.tls()) {
            builder.useTransportSecurity();
            File ca = options.tlsCaFile() == null ? null : new File(options.tlsCaFile());
            try {
                SslContextBuilder ssl = GrpcSslContexts.forClient();
                if (ca != null) {
                    ssl.trustManager(ca);
                }
                builder.sslContext(ssl.build());
            } catch (SSLException | IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot set up TLS" + (ca == null ? "" : " with the trust roots "
                        + ca) + ": " + e.getMessage(), e);
            }
        } else {
            builder.usePlaintext();
        }
        if (options.token() != null) {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, "Bearer " + options.token());
            builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
        }
        // Replies are bounded by the server's own message limit; ours must not be the smaller one.
        builder.maxInboundMessageSize(Integer.MAX_VALUE).userAgent("warpdp-java");
        if (options.retries() > 0) {
            // gRPC repeats a call that found no server (restart, failover) itself, as long as no reply has
            // come; every warpdp call is idempotent. Requests are kept for that up to the buffer limits.
            builder.defaultServiceConfig(retryConfig(options.retries())).enableRetry()
                    .maxRetryAttempts(options.retries() + 1)
                    .perRpcBufferLimit(RETRY_BUFFER_PER_CALL).retryBufferSize(RETRY_BUFFER);
        } else {
            builder.disableRetry();
        }
        this.channel = builder.build();
        this.blockingStub = WarpdpGrpc.newBlockingStub(channel);
        this.asyncStub = WarpdpGrpc.newStub(channel);
    }

    private static final long RETRY_BUFFER_PER_CALL = 256L << 20;
    private static final long RETRY_BUFFER = 1L << 30;

    /** The service config: UNAVAILABLE calls of the warpdp service (not health checks: they are probes) are retried {@code retries} times, with
     * exponential backoff from 0.25 s (gRPC randomizes each wait between 0 and the backoff). */
    static Map<String, Object> retryConfig(int retries) {
        Map<String, Object> policy = Map.of(
                "maxAttempts", (double) (retries + 1),
                "initialBackoff", "0.25s",
                "maxBackoff", "5s",
                "backoffMultiplier", 2.0,
                "retryableStatusCodes", List.of("UNAVAILABLE"));
        Map<String, Object> methods = Map.of(
                "name", List.of(Map.of("service", "warpdp.v1.Warpdp")),
                "retryPolicy", policy);
        return Map.of("methodConfig", List.of(methods));
    }

    // A fixed list of servers: our own name resolver hands gRPC all of them, round_robin spreads the calls
    // and skips servers that are down.
    @SuppressWarnings("deprecation") // nameResolverFactory: the only per-channel resolver hook in gRPC 1.41
    private static NettyChannelBuilder listChannel(List<String> addresses) {
        List<EquivalentAddressGroup> groups = new ArrayList<>();
        for (String address : addresses) {
            int colon = address.lastIndexOf(':');
            String host = address.substring(0, colon).replace("[", "").replace("]", "");
            groups.add(new EquivalentAddressGroup(new InetSocketAddress(host, Integer.parseInt(address.substring(
                    colon + 1)))));
        }
        NameResolver.Factory factory = new NameResolver.Factory() {
            @Override
            public NameResolver newNameResolver(URI uri, NameResolver.Args args) {
                return LIST_SCHEME.equals(uri.getScheme()) ? new StaticResolver(groups) : null;
            }

            @Override
            public String getDefaultScheme() {
                return LIST_SCHEME;
            }
        };
        return NettyChannelBuilder.forTarget(LIST_SCHEME + ":///servers")
                .nameResolverFactory(factory)
                .defaultLoadBalancingPolicy("round_robin");
    }

    private static final class StaticResolver extends NameResolver {
        private final List<EquivalentAddressGroup> groups;

        StaticResolver(List<EquivalentAddressGroup> groups) {
            this.groups = groups;
        }

        @Override
        public String getServiceAuthority() {
            SocketAddress first = groups.get(0).getAddresses().get(0);
            return first instanceof InetSocketAddress a ? a.getHostString() + ":" + a.getPort() : "servers";
        }

        @Override
        public void start(Listener2 listener) {
            listener.onResult(ResolutionResult.newBuilder().setAddresses(groups).build());
        }

        @Override
        public void shutdown() {
        }
    }

    @Override
    public String health(String service, long timeoutMillis) {
        try {
            return HealthGrpc.newBlockingStub(channel).withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
                    .check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus().name();
        } catch (StatusRuntimeException e) {
            throw failure("health check", e);
        }
    }

    @Override
    public ServerInfo serverInfo(long timeoutMillis) {
        ServerInfoReply r;
        try {
            r = WarpdpGrpc.newBlockingStub(channel).withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
                    .serverInfo(ServerInfoRequest.getDefaultInstance());
        } catch (StatusRuntimeException e) {
            throw failure("ServerInfo", e);
        }
        List<ServerInfo.Algorithm> algorithms = new ArrayList<>();
        r.getAlgorithmsList().forEach(a -> algorithms.add(
                new ServerInfo.Algorithm(a.getName(), a.getRpc(), a.getBackend(), a.getDetail())));
        List<ServerInfo.Device> devices = new ArrayList<>();
        r.getDevicesList().forEach(d -> devices.add(new ServerInfo.Device(d.getKind(), d.getIndex(), d.getName(),
                d.getMemoryBytes(), d.getCores(), d.getDetail())));
        return new ServerInfo(r.getVersion(), r.getBackend(), r.getRequestedBackend(), algorithms, devices,
                r.getLimits().getMaxRequestCells(), r.getLimits().getMaxMessageBytes(),
                new ServerInfo.Batching(r.getBatching().getEnabled(), r.getBatching().getMaxWaitUs(),
                        r.getBatching().getMaxBatchCells(), r.getBatching().getWorkers()),
                r.getTokenRequired());
    }

    /**
     * How one algorithm's jobs travel: the request message of a job, the unary and the stream call, and where
     * a reply's results go. {@link #execute} runs any algorithm through it.
     */
    interface Rpc<J, Q, R> {
        String name();

        long pairs(J job);

        Q request(J job);

        R unary(WarpdpGrpc.WarpdpBlockingStub stub, Q request);

        void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<R> replies);

        long chunk(R reply);

        /** Stores the results of pairs {@code from .. to-1}; throws WarpdpException when the reply does not fit. */
        void store(R reply, int from, int to, String what);
    }

    @Override
    public void pairHmm(List<PairHmmBatches> requests, boolean useDouble, double[] out, int offset,
                        long deadlineMillis) {
        execute(new Rpc<PairHmmBatches, PairHmmRequest, PairHmmReply>() {
            @Override
            public String name() {
                return "PairHmm";
            }

            @Override
            public long pairs(PairHmmBatches job) {
                return job.nPairs();
            }

            @Override
            public PairHmmRequest request(PairHmmBatches job) {
                return pairHmmRequest(job, useDouble);
            }

            @Override
            public PairHmmReply unary(WarpdpGrpc.WarpdpBlockingStub stub, PairHmmRequest request) {
                return stub.pairHmm(request);
            }

            @Override
            public void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<PairHmmReply> replies) {
                stub.pairHmmStream(replies);
            }

            @Override
            public long chunk(PairHmmReply reply) {
                return reply.getChunk();
            }

            @Override
            public void store(PairHmmReply reply, int from, int to, String what) {
                ByteString values = reply.getLog10Likelihoods();
                if (values.size() != 8L * (to - from)) {
                    throw new WarpdpException("INTERNAL", "server " + target + " sent " + values.size() / 8.0
                            + " likelihoods in " + what + " where " + (to - from) + " were due");
                }
                values.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asDoubleBuffer().get(out, from, to - from);
            }
        }, requests, offset, deadlineMillis);
    }

    @Override
    public void xdrop(List<XdropPairs> requests, XdropParams params, XdropResults out, int offset,
                      long deadlineMillis) {
        execute(new Rpc<XdropPairs, XdropRequest, XdropReply>() {
            @Override
            public String name() {
                return "Xdrop";
            }

            @Override
            public long pairs(XdropPairs job) {
                return job.nPairs();
            }

            @Override
            public XdropRequest request(XdropPairs p) {
                org.warpdp.v1.XdropPairs packed = org.warpdp.v1.XdropPairs.newBuilder()
                        .setHBases(UnsafeByteOperations.unsafeWrap(p.hBases())).setHOffsets(int64(p.hOffsets()))
                        .setVBases(UnsafeByteOperations.unsafeWrap(p.vBases())).setVOffsets(int64(p.vOffsets()))
                        .setHPos(int64(p.hPos())).setVPos(int64(p.vPos()))
                        .build();
                return XdropRequest.newBuilder().setPairs(packed).setK(params.k()).setX(params.x())
                        .setMatch(params.match()).setMismatch(params.mismatch()).setGap(params.gap())
                        .setReport(params.report() == XdropParams.Report.BEST ? XdropReport.XDROP_REPORT_BEST
                                : XdropReport.XDROP_REPORT_LONGEST)
                        .build();
            }

            @Override
            public XdropReply unary(WarpdpGrpc.WarpdpBlockingStub stub, XdropRequest request) {
                return stub.xdrop(request);
            }

            @Override
            public void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<XdropReply> replies) {
                stub.xdropStream(replies);
            }

            @Override
            public long chunk(XdropReply reply) {
                return reply.getChunk();
            }

            @Override
            public void store(XdropReply r, int from, int to, String what) {
                ByteString[] columns = {r.getScore(), r.getBeginH(), r.getEndH(), r.getBeginV(), r.getEndV(),
                    r.getCells()};
                long[][] into = {out.score(), out.beginH(), out.endH(), out.beginV(), out.endV(), out.cells()};
                for (int c = 0; c < columns.length; c++) {
                    longs(columns[c], to - from, what).get(into[c], from, to - from);
                }
            }
        }, requests, offset, deadlineMillis);
    }

    @Override
    public void seedExtend(List<SeedExtPairs> requests, SeedExtParams params, SeedExtResults out, int offset,
                           long deadlineMillis) {
        execute(new Rpc<SeedExtPairs, SeedExtendRequest, SeedExtendReply>() {
            @Override
            public String name() {
                return "SeedExtend";
            }

            @Override
            public long pairs(SeedExtPairs job) {
                return job.nPairs();
            }

            @Override
            public SeedExtendRequest request(SeedExtPairs p) {
                org.warpdp.v1.SeedExtPairs packed = org.warpdp.v1.SeedExtPairs.newBuilder()
                        .setQuery(UnsafeByteOperations.unsafeWrap(p.query())).setQueryOffsets(int64(p.queryOffsets()))
                        .setTarget(UnsafeByteOperations.unsafeWrap(p.target()))
                        .setTargetOffsets(int64(p.targetOffsets()))
                        .setH0(int64(p.h0()))
                        .build();
                return SeedExtendRequest.newBuilder().setPairs(packed).setA(params.a()).setB(params.b())
                        .setODel(params.oDel()).setEDel(params.eDel()).setOIns(params.oIns()).setEIns(params.eIns())
                        .setW(params.w()).setEndBonus(params.endBonus()).setZdrop(params.zdrop())
                        .build();
            }

            @Override
            public SeedExtendReply unary(WarpdpGrpc.WarpdpBlockingStub stub, SeedExtendRequest request) {
                return stub.seedExtend(request);
            }

            @Override
            public void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<SeedExtendReply> replies) {
                stub.seedExtendStream(replies);
            }

            @Override
            public long chunk(SeedExtendReply reply) {
                return reply.getChunk();
            }

            @Override
            public void store(SeedExtendReply r, int from, int to, String what) {
                ByteString[] columns = {r.getScore(), r.getQle(), r.getTle(), r.getGtle(), r.getGscore(),
                    r.getMaxOff()};
                int[][] into = {out.score(), out.qle(), out.tle(), out.gtle(), out.gscore(), out.maxOff()};
                for (int c = 0; c < columns.length; c++) {
                    LongBuffer values = longs(columns[c], to - from, what);
                    for (int i = 0; i < to - from; i++) {
                        into[c][from + i] = Math.toIntExact(values.get(i)); // ksw_extend2's values are ints
                    }
                }
            }
        }, requests, offset, deadlineMillis);
    }

    @Override
    public void align(List<QueryTargetPairs> requests, AlignParams params, AlignResults out, int offset,
                      long deadlineMillis) {
        execute(RaggedRpcs.align(this, params, out), requests, offset, deadlineMillis);
    }

    @Override
    public void edit(List<QueryTargetPairs> requests, EditParams params, EditResults out, int offset,
                     long deadlineMillis) {
        execute(RaggedRpcs.edit(this, params, out), requests, offset, deadlineMillis);
    }

    /** The server's address, for messages. */
    String target() {
        return target;
    }

    // The int64 values of a reply column, which must hold one per pair.
    LongBuffer longs(ByteString column, int n, String what) {
        if (column.size() != 8L * n) {
            throw new WarpdpException("INTERNAL", "server " + target + " sent " + column.size() / 8.0
                    + " values per column in " + what + " where " + n + " were due");
        }
        return column.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
    }

    /** One request is a unary call; several are streamed, one stream per server, results written in order. */
    private <J, Q, R> void execute(Rpc<J, Q, R> rpc, List<J> requests, int offset, long deadlineMillis) {
        int[] starts = new int[requests.size() + 1];
        starts[0] = offset;
        for (int i = 0; i < requests.size(); i++) {
            starts[i + 1] = Math.addExact(starts[i], Math.toIntExact(rpc.pairs(requests.get(i))));
        }
        if (requests.size() == 1) {
            WarpdpGrpc.WarpdpBlockingStub stub = blockingStub;
            if (deadlineMillis > 0) {
                stub = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS);
            }
            try {
                rpc.store(rpc.unary(stub, rpc.request(requests.get(0))), starts[0], starts[1], "the reply");
            } catch (StatusRuntimeException e) {
                throw failure(rpc.name(), e);
            }
            return;
        }
        String method = rpc.name() + "Stream";
        // One stream per server (round_robin puts each new call on the next one), each with a contiguous run.
        int streams = Math.min(servers, requests.size());
        List<CompletableFuture<Void>> calls = new ArrayList<>();
        for (int s = 0; s < streams; s++) {
            int from = (int) ((long) requests.size() * s / streams);
            int to = (int) ((long) requests.size() * (s + 1) / streams);
            calls.add(stream(rpc, requests.subList(from, to), starts, from, deadlineMillis));
        }
        try {
            for (CompletableFuture<Void> call : calls) {
                call.get();
            }
        } catch (ExecutionException e) {
            calls.forEach(c -> c.cancel(true));
            Throwable cause = e.getCause();
            if (cause instanceof StatusRuntimeException sre) {
                throw failure(method, sre);
            }
            if (cause instanceof WarpdpException we) {
                throw we;
            }
            throw new WarpdpException("INTERNAL", method + " to " + target + " failed: " + cause, cause);
        } catch (InterruptedException e) {
            calls.forEach(c -> c.cancel(true));
            Thread.currentThread().interrupt();
            throw new WarpdpException("CANCELLED", "interrupted while waiting for " + target, e);
        }
    }

    // Sends the requests as the transport can take them (flow control: at most one buffered chunk), and
    // stores each reply where its chunk's results belong.
    private <J, Q, R> CompletableFuture<Void> stream(Rpc<J, Q, R> rpc, List<J> requests, int[] starts, int first,
                                                     long deadlineMillis) {
        String method = rpc.name() + "Stream";
        CompletableFuture<Void> done = new CompletableFuture<>();
        WarpdpGrpc.WarpdpStub stub = asyncStub;
        if (deadlineMillis > 0) {
            stub = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS);
        }
        rpc.stream(stub, new ClientResponseObserver<Q, R>() {
            private ClientCallStreamObserver<Q> call;
            private int sent;
            private int received;
            private boolean halfClosed;

            @Override
            public void beforeStart(ClientCallStreamObserver<Q> requestStream) {
                call = requestStream;
                requestStream.setOnReadyHandler(this::sendMore);
                // A failed or abandoned job also stops the server's work on it (no-op once the call is over).
                done.whenComplete((ok, error) -> {
                    if (error != null) {
                        requestStream.cancel("the job was abandoned", error);
                    }
                });
            }

            private synchronized void sendMore() {
                while (call.isReady() && sent < requests.size() && !done.isDone()) {
                    call.onNext(rpc.request(requests.get(sent++)));
                }
                if (sent == requests.size() && !halfClosed) {
                    halfClosed = true;
                    call.onCompleted();
                }
            }

            @Override
            public synchronized void onNext(R reply) {
                if (rpc.chunk(reply) != received || received >= requests.size()) {
                    done.completeExceptionally(new WarpdpException("INTERNAL", method + " to " + target
                            + " answered chunk " + rpc.chunk(reply) + " where chunk " + received + " was due"));
                    return;
                }
                int k = first + received;
                try {
                    rpc.store(reply, starts[k], starts[k + 1], "reply " + received);
                } catch (WarpdpException e) {
                    done.completeExceptionally(e);
                    return;
                }
                received++;
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public synchronized void onCompleted() {
                if (received != requests.size()) {
                    done.completeExceptionally(new WarpdpException("INTERNAL", method + " to " + target
                            + " ended after " + received + " of " + requests.size() + " replies"));
                } else {
                    done.complete(null);
                }
            }
        });
        return done;
    }

    // The arrays go into the message without a copy; they are not changed while the call runs.
    private static PairHmmRequest pairHmmRequest(PairHmmBatches b, boolean useDouble) {
        org.warpdp.v1.PairHmmBatches packed = org.warpdp.v1.PairHmmBatches.newBuilder()
                .setReadBases(UnsafeByteOperations.unsafeWrap(b.readBases()))
                .setReadQuals(UnsafeByteOperations.unsafeWrap(b.readQuals()))
                .setReadIns(UnsafeByteOperations.unsafeWrap(b.readIns()))
                .setReadDel(UnsafeByteOperations.unsafeWrap(b.readDel()))
                .setReadGcp(UnsafeByteOperations.unsafeWrap(b.readGcp()))
                .setReadOffsets(int64(b.readOffsets()))
                .setHapBases(UnsafeByteOperations.unsafeWrap(b.hapBases()))
                .setHapOffsets(int64(b.hapOffsets()))
                .setBatchReads(int64(b.batchReads()))
                .setBatchHaps(int64(b.batchHaps()))
                .build();
        return PairHmmRequest.newBuilder().setBatches(packed).setUseDouble(useDouble).build();
    }

    static ByteString int64(long[] values) {
        ByteBuffer buffer = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        buffer.asLongBuffer().put(values);
        return UnsafeByteOperations.unsafeWrap(buffer.array());
    }

    private static ByteString int64(int[] values) {
        ByteBuffer buffer = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : values) {
            buffer.putLong(v);
        }
        return UnsafeByteOperations.unsafeWrap(buffer.array());
    }

    private WarpdpException failure(String call, StatusRuntimeException e) {
        Status status = e.getStatus();
        String detail = status.getDescription() != null ? status.getDescription() : "no detail";
        if (status.getCause() != null && status.getCause().getMessage() != null) {
            detail += " (" + status.getCause().getMessage() + ")"; // e.g. "Connection refused"
        }
        return new WarpdpException(status.getCode().name(), call + " to warpdp server " + target + " failed: "
                + status.getCode() + ": " + detail, e);
    }

    @Override
    public void close() {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
