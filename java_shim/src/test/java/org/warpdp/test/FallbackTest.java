package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;
import org.warpdp.gatk.GklFallback;

import com.intel.gkl.pairhmm.IntelPairHmm;
import com.intel.gkl.pairhmm.IntelPairHmmOMP;

/**
 * With the server unreachable, GATK's classes run Intel GKL's own native code (GKL's jar sits behind ours on
 * the test class path, as in GATK) instead of failing, and give GKL's results.
 */
public class FallbackTest {

    private static void check(IntelPairHmm hmm, String gklClass) throws Exception {
        String saved = TestSupport.address();
        System.setProperty("warpdp.address", "127.0.0.1:" + TestSupport.freePort());
        try {
            assertTrue("load() falls back to GKL", hmm.load(null));
        } finally {
            System.setProperty("warpdp.address", saved);
        }
        PairHMMNativeBinding active = hmm.active();
        assertNotSame("not the warpdp binding", hmm.warpdp(), active);
        assertEquals(gklClass, active.getClass().getName());
        assertSame("GKL's class, defined by the fallback's own loader", GklFallback.loaderInUse(),
                active.getClass().getClassLoader());
        PairHMMNativeArguments args = new PairHMMNativeArguments();
        args.maxNumberOfThreads = 1;
        hmm.initialize(args);
        double[] out = new double[1];
        hmm.computeLikelihoods(new ReadDataHolder[] {TestSupport.simpleRead()},
                new HaplotypeDataHolder[] {TestSupport.simpleHap()}, out);
        assertEquals(TestSupport.SIMPLE_EXPECTED, out[0], 1e-5);
        for (TestSupport.GklRow row : TestSupport.gklRows()) {
            hmm.computeLikelihoods(new ReadDataHolder[] {row.read()}, new HaplotypeDataHolder[] {row.hap()}, out);
            assertEquals("gkl-pairhmm-testdata.txt line " + row.line(), row.expected(), out[0], 1e-5);
        }
        hmm.done();
    }

    @Test
    public void ompFallsBackToGklOmp() throws Exception {
        check(new IntelPairHmmOMP(), "com.intel.gkl.pairhmm.IntelPairHmmOMP");
    }

    @Test
    public void avxFallsBackToGklAvx() throws Exception {
        check(new IntelPairHmm(), "com.intel.gkl.pairhmm.IntelPairHmm");
    }
}
