package com.intel.gkl.pairhmm;

/**
 * Stands in for GKL's OpenMP Pair-HMM, which GATK instantiates for
 * {@code --pair-hmm-implementation AVX_LOGLESS_CACHING_OMP} and tries first for the default
 * {@code FASTEST_AVAILABLE}. Same as {@link IntelPairHmm}: the server does the parallel work, so GATK's
 * {@code --native-pair-hmm-threads} has no effect.
 */
public final class IntelPairHmmOMP extends IntelPairHmm {
    public IntelPairHmmOMP() {
    }

    @Override
    String gklClassName() {
        return "com.intel.gkl.pairhmm.IntelPairHmmOMP";
    }
}
