package org.warpdp.gatk;

import java.io.File;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.WarpdpClient;

/**
 * GATK's {@link PairHMMNativeBinding} computed on a warpdp server: a drop-in for GKL's native Pair-HMM
 * with the same inputs, results (GKL's numerics, computed by the server) and argument checks.
 *
 * <p>GATK's {@code VectorLoglessPairHMM} calls {@link #load} (false makes GATK fall back or fail, as for a
 * CPU without AVX), {@link #initialize}, then {@link #computeLikelihoods} once per region and sample,
 * and {@link #done} when it closes. The server address and token come from {@code warpdp.*} system
 * properties or {@code WARPDP_*} environment variables ({@link ClientOptions#fromEnvironment()}).
 */
public class WarpdpPairHmm implements PairHMMNativeBinding {
    private static final Logger LOG = Logger.getLogger("org.warpdp");

    private final ClientOptions fixedOptions;
    private volatile WarpdpClient client;
    private volatile boolean useDouble;

    /** Options from system properties / environment, read at {@link #load}. */
    public WarpdpPairHmm() {
        this(null);
    }

    /** Fixed options (null: from system properties / environment at {@link #load}). */
    public WarpdpPairHmm(ClientOptions options) {
        this.fixedOptions = options;
    }

    /**
     * Connects to the server and checks its health. Returns false, with a warning logged, when the server
     * is unreachable, not serving or misconfigured; GATK then uses another Pair-HMM (with
     * {@code FASTEST_AVAILABLE}) or stops (an explicitly requested native implementation).
     *
     * @param tempDir unused (GKL extracts its native library there)
     */
    @Override
    public synchronized boolean load(File tempDir) {
        String failure = connect();
        if (failure != null) {
            LOG.warning("warpdp Pair-HMM not available: " + failure);
            return false;
        }
        return true;
    }

    /**
     * What {@link #load} does, without the warning: connects and checks the server; returns null when it
     * serves, else why not (for callers that report it themselves, as the GKL fallback does).
     */
    public synchronized String connect() {
        if (client != null) {
            return null;
        }
        WarpdpClient candidate;
        try {
            candidate = SharedClients.acquireServing(fixedOptions, "Pair-HMM");
        } catch (RuntimeException e) {
            return e.getMessage();
        }
        client = candidate;
        return null;
    }

    /** Takes {@code useDoublePrecision}; the thread count is the server's business. Null means defaults
     * (float), as in GKL. */
    @Override
    public void initialize(PairHMMNativeArguments args) {
        useDouble = args != null && args.useDoublePrecision;
        if (LOG.isLoggable(Level.FINE)) {
            LOG.fine("warpdp Pair-HMM: " + (useDouble ? "double" : "float") + " precision");
        }
    }

    /**
     * Log10 likelihood of every read against every haplotype, read-major:
     * {@code likelihoodArray[r * haplotypeDataArray.length + h]}.
     *
     * @throws NullPointerException     an array, an element or one of its byte arrays is null
     * @throws IllegalArgumentException the likelihood array does not have reads x haplotypes values, a
     *                                  quality array is not as long as its read's bases, or a read or
     *                                  haplotype is empty
     * @throws IllegalStateException    {@link #load} did not succeed (or {@link #done} was called)
     * @throws org.warpdp.client.WarpdpException the server failed or could not be reached
     */
    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray) {
        if (readDataArray == null || haplotypeDataArray == null || likelihoodArray == null) {
            throw new NullPointerException("Input is null");
        }
        long pairs = (long) readDataArray.length * haplotypeDataArray.length;
        if (likelihoodArray.length != pairs) {
            throw new IllegalArgumentException("likelihoodArray has " + likelihoodArray.length + " values but "
                    + readDataArray.length + " reads x " + haplotypeDataArray.length + " haplotypes need " + pairs);
        }
        PairHmmBatches job = pack(readDataArray, haplotypeDataArray);
        WarpdpClient c = client;
        if (c == null) {
            throw new IllegalStateException("the warpdp Pair-HMM is not loaded: load() must return true first");
        }
        if (pairs > 0) {
            c.pairHmm(job, useDouble, likelihoodArray, 0);
        }
    }

    // One batch: GATK's region is every read against every haplotype. Checked here so errors name the
    // GATK-side array element rather than a packed offset.
    static PairHmmBatches pack(ReadDataHolder[] reads, HaplotypeDataHolder[] haps) {
        PairHmmBatches.Builder b = PairHmmBatches.builder();
        for (int h = 0; h < haps.length; h++) {
            if (haps[h] == null || haps[h].haplotypeBases == null) {
                throw new NullPointerException("haplotypeDataArray[" + h + "]" + (haps[h] == null ? "" : ".haplotypeBases")
                        + " is null");
            }
            if (haps[h].haplotypeBases.length == 0) {
                throw new IllegalArgumentException("haplotypeDataArray[" + h + "].haplotypeBases is empty");
            }
            b.addHaplotype(haps[h].haplotypeBases);
        }
        for (int r = 0; r < reads.length; r++) {
            ReadDataHolder read = reads[r];
            String name = "readDataArray[" + r + "]";
            if (read == null) {
                throw new NullPointerException(name + " is null");
            }
            byte[] bases = notNull(read.readBases, name + ".readBases");
            if (bases.length == 0) {
                throw new IllegalArgumentException(name + ".readBases is empty");
            }
            b.addRead(bases,
                    sameLength(read.readQuals, bases, name + ".readQuals"),
                    sameLength(read.insertionGOP, bases, name + ".insertionGOP"),
                    sameLength(read.deletionGOP, bases, name + ".deletionGOP"),
                    sameLength(read.overallGCP, bases, name + ".overallGCP"));
        }
        return b.build();
    }

    private static byte[] notNull(byte[] array, String name) {
        if (array == null) {
            throw new NullPointerException(name + " is null");
        }
        return array;
    }

    private static byte[] sameLength(byte[] array, byte[] bases, String name) {
        notNull(array, name);
        if (array.length != bases.length) {
            throw new IllegalArgumentException(name + " has " + array.length + " values but the read has "
                    + bases.length + " bases");
        }
        return array;
    }

    /** Releases the server connection (closed when no other binding uses it). */
    @Override
    public synchronized void done() {
        WarpdpClient c = client;
        client = null;
        if (c != null) {
            SharedClients.release(c);
        }
    }

    /** The client in use, or null before a successful {@link #load} (for tests and diagnostics). */
    public WarpdpClient client() {
        return client;
    }
}
