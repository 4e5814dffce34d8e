package com.intel.gkl.pairhmm;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.warpdp.gatk.GklFallback;
import org.warpdp.gatk.WarpdpPairHmm;

/**
 * Stands in for GKL's AVX Pair-HMM: GATK instantiates this class by name for
 * {@code --pair-hmm-implementation AVX_LOGLESS_CACHING} (and as the second choice of
 * {@code FASTEST_AVAILABLE}). With warpdp-gatk.jar before GATK's jar on the class path, GATK gets this
 * class, which computes on a warpdp server through {@link WarpdpPairHmm}. When the server cannot be reached
 * at {@link #load}, it runs GKL's own class of the same name instead ({@link GklFallback}), so GATK keeps
 * GKL's AVX speed rather than dropping to its Java Pair-HMM.
 */
public class IntelPairHmm implements PairHMMNativeBinding {
    private final WarpdpPairHmm warpdp = new WarpdpPairHmm();
    private volatile PairHMMNativeBinding active; // warpdp, GKL's own, or null before a successful load()

    // GKL's own subclasses in GATK's jar (IntelPairHmmFpga) may touch these; kept for binary compatibility.
    boolean useOmp;

    public IntelPairHmm() {
    }

    void setNativeLibraryName(String nativeLibraryName) {
        // No native library: the work happens on the server.
    }

    /** Connects to the warpdp server; when it is unreachable, loads GKL's own implementation (unless
     * {@code warpdp.fallback=none}). False when neither works. */
    @Override
    public synchronized boolean load(File tempDir) {
        if (active == null) {
            active = GklFallback.serverOrGkl(PairHMMNativeBinding.class, "Pair-HMM", gklClassName(), tempDir,
                                             warpdp, warpdp::connect);
        }
        return active != null;
    }

    /** GKL's class that this one stands for. */
    String gklClassName() {
        return "com.intel.gkl.pairhmm.IntelPairHmm";
    }

    @Override
    public void initialize(PairHMMNativeArguments args) {
        PairHMMNativeBinding a = active;
        (a != null ? a : warpdp).initialize(args);
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray) {
        PairHMMNativeBinding a = active;
        (a != null ? a : warpdp).computeLikelihoods(readDataArray, haplotypeDataArray, likelihoodArray);
    }

    @Override
    public synchronized void done() {
        PairHMMNativeBinding a = active;
        active = null;
        if (a != null && a != warpdp) {
            a.done();
        }
        warpdp.done();
    }

    /** The implementation in use: {@link #warpdp()}, GKL's own (the fallback), or null before load(). */
    public PairHMMNativeBinding active() {
        return active;
    }

    /** The binding doing the work. */
    public WarpdpPairHmm warpdp() {
        return warpdp;
    }
}
