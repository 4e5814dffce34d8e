package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.net.URL;
import java.util.Collections;
import java.util.List;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;

import com.intel.gkl.pairhmm.IntelPairHmm;

/** GATK creates GKL's classes by name; ours must answer to those names and compute on the server. */
public class DropInTest {

    private static void checkDropIn(String className) throws Exception {
        Class<?> type = Class.forName(className);
        String source = type.getProtectionDomain().getCodeSource().getLocation().getPath();
        assertTrue(className + " must come from warpdp-gatk.jar, not " + source, source.endsWith("warpdp-gatk.jar"));
        PairHMMNativeBinding hmm = (PairHMMNativeBinding) type.getConstructor().newInstance();
        assertTrue(className + ".load() must reach the test server", hmm.load(null));
        PairHMMNativeArguments args = new PairHMMNativeArguments();
        args.maxNumberOfThreads = 4;
        args.useDoublePrecision = false;
        hmm.initialize(args);

        // GKL's own simpleTest.
        ReadDataHolder read = TestSupport.simpleRead();
        HaplotypeDataHolder hap = TestSupport.simpleHap();
        double[] likelihood = new double[1];

        IntelPairHmm intel = (IntelPairHmm) hmm;
        assertNotNull("delegates to the warpdp binding", intel.warpdp().client());
        long before = intel.warpdp().client().requestsSent();
        hmm.computeLikelihoods(new ReadDataHolder[] {read}, new HaplotypeDataHolder[] {hap}, likelihood);
        assertEquals(TestSupport.SIMPLE_EXPECTED, likelihood[0], 1e-5);
        assertEquals("one request reached the server", before + 1, intel.warpdp().client().requestsSent());

        hmm.done();
        assertNull("done() releases the connection", intel.warpdp().client());
        assertThrows(IllegalStateException.class, () -> hmm.computeLikelihoods(new ReadDataHolder[] {read},
                new HaplotypeDataHolder[] {hap}, likelihood));
    }

    @Test
    public void intelPairHmmLoadsAndDelegates() throws Exception {
        checkDropIn("com.intel.gkl.pairhmm.IntelPairHmm");
    }

    @Test
    public void intelPairHmmOmpLoadsAndDelegates() throws Exception {
        checkDropIn("com.intel.gkl.pairhmm.IntelPairHmmOMP");
    }

    /** As in GATK's jar, GKL's own classes follow ours on the class path: ours win, and GKL's FPGA class (which
     * GATK creates for EXPERIMENTAL_FPGA_LOGLESS_CACHING and which extends IntelPairHmm) runs on ours. */
    @Test
    public void gklLaterOnTheClassPathIsShadowed() throws Exception {
        List<URL> copies = Collections.list(DropInTest.class.getClassLoader()
                .getResources("com/intel/gkl/pairhmm/IntelPairHmm.class"));
        assumeTrue("GKL's jar is not on the test class path (the pom puts it there); skipping", copies.size() > 1);
        assertTrue("ours first: " + copies, copies.get(0).toString().contains("warpdp-gatk.jar"));
        PairHMMNativeBinding fpga = (PairHMMNativeBinding) Class.forName("com.intel.gkl.pairhmm.IntelPairHmmFpga")
                .getConstructor().newInstance();
        assertTrue(fpga instanceof IntelPairHmm);
        assertTrue(fpga.load(null));
        try {
            fpga.initialize(null);
            double[] out = new double[1];
            fpga.computeLikelihoods(new ReadDataHolder[] {TestSupport.simpleRead()},
                    new HaplotypeDataHolder[] {TestSupport.simpleHap()}, out);
            assertEquals(TestSupport.SIMPLE_EXPECTED, out[0], 1e-5);
            assertNotNull(((IntelPairHmm) fpga).warpdp().client());
        } finally {
            fpga.done();
        }
    }

    @Test
    public void initializeAcceptsNullLikeGkl() {
        PairHMMNativeBinding hmm = new IntelPairHmm();
        assertTrue(hmm.load(null));
        try {
            hmm.initialize(null);
            double[] out = new double[1];
            hmm.computeLikelihoods(new ReadDataHolder[] {TestSupport.simpleRead()},
                    new HaplotypeDataHolder[] {TestSupport.simpleHap()}, out);
            assertEquals(TestSupport.SIMPLE_EXPECTED, out[0], 1e-5);
        } finally {
            hmm.done();
        }
    }
}
