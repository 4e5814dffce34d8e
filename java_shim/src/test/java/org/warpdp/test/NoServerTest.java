package org.warpdp.test;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.WarpdpException;
import org.warpdp.gatk.WarpdpPairHmm;

import com.intel.gkl.pairhmm.IntelPairHmmOMP;

/** Without a server, load() returns false quickly (with the GKL fallback off: see FallbackTest for it on). */
public class NoServerTest {

    // Runs the body with -Dwarpdp.fallback=none, the address restored afterwards.
    private static void withoutFallback(ThrowingRunnable body) throws Exception {
        String savedAddress = TestSupport.address();
        String saved = System.getProperty("warpdp.fallback");
        System.setProperty("warpdp.fallback", "none");
        try {
            body.run();
        } finally {
            System.setProperty("warpdp.address", savedAddress);
            if (saved == null) {
                System.clearProperty("warpdp.fallback");
            } else {
                System.setProperty("warpdp.fallback", saved);
            }
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    public void loadReturnsFalseWhenNothingListens() throws Exception {
        String dead = "127.0.0.1:" + TestSupport.freePort();
        WarpdpPairHmm hmm = new WarpdpPairHmm(ClientOptions.of(dead));
        long start = System.nanoTime();
        assertFalse(hmm.load(null));
        double seconds = (System.nanoTime() - start) / 1e9;
        assertTrue("load() took " + seconds + " s against a closed port", seconds < 5);
        assertNull(hmm.client());
        hmm.initialize(null);
        assertThrows(IllegalStateException.class, () -> hmm.computeLikelihoods(
                new ReadDataHolder[] {TestSupport.simpleRead()}, new HaplotypeDataHolder[] {TestSupport.simpleHap()},
                new double[1]));
        hmm.done(); // harmless without a connection
    }

    @Test
    public void dropInReadsTheAddressPropertyAtLoad() throws Exception {
        String saved = TestSupport.address();
        withoutFallback(() -> {
            System.setProperty("warpdp.address", "127.0.0.1:" + TestSupport.freePort());
            PairHMMNativeBinding omp = new IntelPairHmmOMP();
            assertFalse("no server at the configured address", omp.load(null));
            System.setProperty("warpdp.address", saved);
            assertTrue("the same class finds the test server once the address points to it", omp.load(null));
            omp.done();
        });
    }

    @Test
    public void badSettingsMakeLoadReturnFalseNotThrow() throws Exception {
        withoutFallback(() -> {
            System.setProperty("warpdp.address", "no-port-here");
            assertFalse(new IntelPairHmmOMP().load(null));
        });
        assertThrows(IllegalArgumentException.class, () -> ClientOptions.of("host:99999"));
        assertThrows(IllegalArgumentException.class, () -> ClientOptions.of("a:1,dns:///b:2"));
    }

    @Test
    public void clientCallsFailWithUnavailable() throws Exception {
        try (WarpdpClient client = WarpdpClient.connect(
                ClientOptions.of("127.0.0.1:" + TestSupport.freePort()).withRetries(1))) {
            assertFalse(client.isServing());
            WarpdpException e = assertThrows(WarpdpException.class, client::serverInfo);
            assertTrue(e.getMessage(), e.isUnavailable());
        }
    }
}
