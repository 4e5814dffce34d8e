package com.intel.gkl.pairhmm;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.warpdp.gatk.WarpdpPairHmm;

/**
 * Stands in for GKL's AVX Pair-HMM: GATK instantiates this class by name for
 * {@code --pair-hmm-implementation AVX_LOGLESS_CACHING} (and as the second choice of
 * {@code FASTEST_AVAILABLE}). With warpdp-gatk.jar before GATK's jar on the class path, GATK gets this
 * class, which computes on a warpdp server through {@link WarpdpPairHmm}.
 */
public class IntelPairHmm implements PairHMMNativeBinding {
    private final WarpdpPairHmm warpdp = new WarpdpPairHmm();

    // GKL's own subclasses in GATK's jar (IntelPairHmmFpga) may touch these; kept for binary compatibility.
    boolean useOmp;

    public IntelPairHmm() {
    }

    void setNativeLibraryName(String nativeLibraryName) {
        // No native library: the work happens on the server.
    }

    /** Connects to the warpdp server; false when it is unreachable (the native library GKL would load is
     * not needed). */
    @Override
    public boolean load(File tempDir) {
        return warpdp.load(tempDir);
    }

    @Override
    public void initialize(PairHMMNativeArguments args) {
        warpdp.initialize(args);
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray) {
        warpdp.computeLikelihoods(readDataArray, haplotypeDataArray, likelihoodArray);
    }

    @Override
    public void done() {
        warpdp.done();
    }

    /** The binding doing the work. */
    public WarpdpPairHmm warpdp() {
        return warpdp;
    }
}
