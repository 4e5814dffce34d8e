package org.warpdp.gatk;

import java.io.File;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

import org.broadinstitute.gatk.nativebindings.smithwaterman.SWAlignerNativeBinding;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;
import org.warpdp.client.AlignParams;
import org.warpdp.client.AlignResults;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.QueryTargetPairs;
import org.warpdp.client.WarpdpClient;

/**
 * GATK's {@link SWAlignerNativeBinding} computed on a warpdp server (the Align RPC in mode "gatk"): the
 * CIGAR and alignment offset GKL's {@code IntelSmithWaterman.align} returns, for every overhang strategy
 * and parameter set.
 *
 * <p>GATK's {@code SmithWatermanIntelAligner} calls {@link #load} once (false: GATK uses its Java aligner
 * with {@code --smith-waterman FASTEST_AVAILABLE}, its default), then {@link #align} one pair at a time, and
 * {@link #close} at the end. GATK's interface has no batch call, so each alignment is one unary RPC on
 * the shared channel. Inputs are checked by {@link #check} before anything is sent.
 */
public class WarpdpSmithWaterman implements SWAlignerNativeBinding {
    private static final Logger LOG = Logger.getLogger("org.warpdp");
    /** GKL's limits: sequences up to 32,767 bytes (int16 in its kernel), match up to 65,536. */
    public static final int MAX_SEQUENCE_LENGTH = 32767;
    private static final AtomicLong ALIGNMENTS = new AtomicLong();

    private final ClientOptions fixedOptions;
    private volatile WarpdpClient client;

    /** Options from system properties / environment, read at {@link #load}. */
    public WarpdpSmithWaterman() {
        this(null);
    }

    /** Fixed options (null: from system properties / environment at {@link #load}). */
    public WarpdpSmithWaterman(ClientOptions options) {
        this.fixedOptions = options;
    }

    /**
     * Whether GATK's Smith-Waterman should run on the server: setting {@code warpdp.smithwaterman} (or
     * {@code WARPDP_SMITHWATERMAN}) {@code server}; {@code gkl} (the default) keeps GKL's own native code.
     */
    public static boolean requested() {
        return GklFallback.gklOr("warpdp.smithwaterman", "WARPDP_SMITHWATERMAN", "server").equals("server");
    }

    /** Connects to the server and checks its health; false, with a warning logged, when it does not serve. */
    @Override
    public synchronized boolean load(File tempDir) {
        String failure = connect();
        if (failure != null) {
            LOG.warning("warpdp Smith-Waterman not available: " + failure);
            return false;
        }
        return true;
    }

    /** {@link #load} without the warning: null when the server serves, else why not. */
    public synchronized String connect() {
        if (client != null) {
            return null;
        }
        try {
            client = SharedClients.acquireServing(fixedOptions, "Smith-Waterman");
            return null;
        } catch (RuntimeException e) {
            return e.getMessage();
        }
    }

    /**
     * GKL's alignment of {@code alt} against {@code ref}: the CIGAR (M, I, D, S) and the position in ref
     * where it starts.
     *
     * @throws IllegalArgumentException bad input ({@link #check})
     * @throws IllegalStateException    {@link #load} did not succeed (or {@link #close} was called)
     * @throws org.warpdp.client.WarpdpException the server failed or could not be reached
     */
    @Override
    public SWNativeAlignerResult align(byte[] ref, byte[] alt, SWParameters parameters, SWOverhangStrategy strategy) {
        AlignParams params = check(ref, alt, parameters, strategy);
        WarpdpClient c = client;
        if (c == null) {
            throw new IllegalStateException("the warpdp Smith-Waterman is not loaded: load() must return true first");
        }
        QueryTargetPairs pair = new QueryTargetPairs(alt, new long[] {0, alt.length}, ref, new long[] {0, ref.length});
        AlignResults r = c.align(pair, params);
        ALIGNMENTS.incrementAndGet();
        return new SWNativeAlignerResult(r.cigarString(0), Math.toIntExact(r.targetBegin()[0]));
    }

    /**
     * The checks of {@link #align}, the same whichever implementation then runs: IllegalArgumentException for
     * a null or empty sequence, a sequence over {@value #MAX_SEQUENCE_LENGTH} bytes, null parameters or
     * strategy, match outside 1..65,536, a mismatch or gap value above 0 or below -65,536 (GATK's
     * SWParameters hold them negative), or lengths whose scores could overflow int32. Returns the request's
     * parameters.
     */
    public static AlignParams check(byte[] ref, byte[] alt, SWParameters parameters, SWOverhangStrategy strategy) {
        checkSequence(ref, "ref");
        checkSequence(alt, "alt");
        if (parameters == null) {
            throw new IllegalArgumentException("parameters (SWParameters) is null");
        }
        if (strategy == null) {
            throw new IllegalArgumentException("overhangStrategy is null");
        }
        AlignParams params = AlignParams.gatk(parameters.getMatchValue(), parameters.getMismatchPenalty(),
                parameters.getGapOpenPenalty(), parameters.getGapExtendPenalty(),
                AlignParams.Overhang.valueOf(strategy.name()));
        params.checkLengths(0, alt.length, ref.length);
        return params;
    }

    private static void checkSequence(byte[] sequence, String name) {
        if (sequence == null) {
            throw new IllegalArgumentException(name + " is null");
        }
        if (sequence.length == 0) {
            throw new IllegalArgumentException(name + " is empty: cannot align empty sequences");
        }
        if (sequence.length > MAX_SEQUENCE_LENGTH) {
            throw new IllegalArgumentException(name + " has " + sequence.length + " bytes, over GKL's maximum of "
                    + MAX_SEQUENCE_LENGTH);
        }
    }

    /** Releases the server connection (closed when no other binding uses it); logs the alignments so far. */
    @Override
    public synchronized void close() {
        WarpdpClient c = client;
        client = null;
        if (c != null) {
            LOG.info("warpdp Smith-Waterman: " + ALIGNMENTS.get() + " alignments on server " + c.options().target()
                    + " in this JVM so far");
            SharedClients.release(c);
        }
    }

    /** The client in use, or null before a successful {@link #load} (for tests and diagnostics). */
    public WarpdpClient client() {
        return client;
    }

    /** Alignments computed on a server by this JVM (for tests and diagnostics). */
    public static long alignments() {
        return ALIGNMENTS.get();
    }
}
