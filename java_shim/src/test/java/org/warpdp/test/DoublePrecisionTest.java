package org.warpdp.test;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertTrue;

import java.util.List;

import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.junit.Test;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.WarpdpClient;

/** initialize(useDoublePrecision) reaches the server: double results are GKL's within tolerance but not
 * the float path's bits. */
public class DoublePrecisionTest {

    @Test
    public void doublePrecisionIsHonoured() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        TestSupport.Record region = records.get(0);
        int n = region.reads().length * region.haps().length;
        double[] asFloat = new double[n];
        double[] asDouble = new double[n];
        PairHMMNativeBinding f = GklReferenceTest.loaded(false);
        PairHMMNativeBinding d = GklReferenceTest.loaded(true);
        try {
            f.computeLikelihoods(region.reads(), region.haps(), asFloat);
            d.computeLikelihoods(region.reads(), region.haps(), asDouble);
        } finally {
            f.done();
            d.done();
        }
        TestSupport.assertClose("float", region.expected(), asFloat, TestSupport.TOLERANCE);
        TestSupport.assertClose("double", region.expected(), asDouble, TestSupport.TOLERANCE);
        int differ = 0;
        for (int i = 0; i < n; i++) {
            if (Double.doubleToLongBits(asFloat[i]) != Double.doubleToLongBits(asDouble[i])) {
                differ++;
            }
        }
        assertTrue("double precision gave the float path's exact values: was the flag ignored?", differ > n / 2);

        // The client API with useDouble gives the same values as the binding in double mode.
        PairHmmBatches.Builder b = PairHmmBatches.builder();
        for (var hap : region.haps()) {
            b.addHaplotype(hap.haplotypeBases);
        }
        for (var read : region.reads()) {
            b.addRead(read.readBases, read.readQuals, read.insertionGOP, read.deletionGOP, read.overallGCP);
        }
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertArrayEquals(asDouble, client.pairHmm(b.build(), true), 0.0);
            assertArrayEquals(asFloat, client.pairHmm(b.build(), false), 0.0);
        }
    }
}
