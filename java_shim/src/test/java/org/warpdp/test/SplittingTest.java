package org.warpdp.test;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.List;

import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.gatk.WarpdpPairHmm;

/** A large region split into several requests under a cell budget gives exactly the one-request result. */
public class SplittingTest {

    private static double[] compute(TestSupport.Record region, long maxCells, long[] requests) {
        ClientOptions options = ClientOptions.of(TestSupport.address()).withMaxCellsPerRequest(maxCells);
        WarpdpPairHmm hmm = new WarpdpPairHmm(options);
        assertTrue(hmm.load(null));
        try {
            hmm.initialize(null);
            double[] out = new double[region.reads().length * region.haps().length];
            long before = hmm.client().requestsSent();
            hmm.computeLikelihoods(region.reads(), region.haps(), out);
            requests[0] = hmm.client().requestsSent() - before;
            return out;
        } finally {
            hmm.done();
        }
    }

    @Test
    public void splitRegionMatchesOneCall() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        TestSupport.Record region = TestSupport.bigRegion(records, 400, 12);
        long[] requests = new long[1];
        double[] whole = compute(region, 0, requests);
        assertEquals("the region fits one request by default", 1, requests[0]);

        long cellsPerRead = 0;
        for (var hap : region.haps()) {
            cellsPerRead += (long) hap.haplotypeBases.length * region.reads()[0].readBases.length;
        }
        // By reads: a few reads per request.
        double[] byReads = compute(region, 5 * cellsPerRead, requests);
        assertTrue("split by reads: " + requests[0] + " requests", requests[0] > 10);
        assertArrayEquals(whole, byReads, 0.0);
        // Budget below one read against all haplotypes: reads are cut by haplotypes as well.
        double[] byHaps = compute(region, cellsPerRead / 3, requests);
        assertTrue("split by haplotypes: " + requests[0] + " requests", requests[0] > region.reads().length);
        assertArrayEquals(whole, byHaps, 0.0);
        // Below one pair: every pair travels alone (on the first 40 reads, to keep the test quick).
        TestSupport.Record part = new TestSupport.Record(0, Arrays.copyOf(region.reads(), 40), region.haps(),
                new double[0]);
        double[] single = compute(part, 1, requests);
        assertEquals(40 * region.haps().length, requests[0]);
        assertArrayEquals(Arrays.copyOf(whole, 40 * region.haps().length), single, 0.0);
    }
}
