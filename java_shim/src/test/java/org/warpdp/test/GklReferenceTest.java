package org.warpdp.test;

import static org.junit.Assert.assertTrue;

import java.util.List;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;
import org.warpdp.gatk.WarpdpPairHmm;

/**
 * Drives the binding as GATK's VectorLoglessPairHMM does (load, initialize, computeLikelihoods per region,
 * done) and checks GKL's own reference values.
 */
public class GklReferenceTest {

    static PairHMMNativeBinding loaded(boolean useDouble) {
        PairHMMNativeBinding hmm = new WarpdpPairHmm(); // address from -Dwarpdp.address, as in GATK
        assertTrue("load() must find the test server at " + TestSupport.address(), hmm.load(null));
        PairHMMNativeArguments args = new PairHMMNativeArguments();
        args.maxNumberOfThreads = 4; // GATK's default --native-pair-hmm-threads
        args.useDoublePrecision = useDouble;
        hmm.initialize(args);
        return hmm;
    }

    private static void everyGklRow(boolean useDouble) throws Exception {
        List<TestSupport.GklRow> rows = TestSupport.gklRows();
        PairHMMNativeBinding hmm = loaded(useDouble);
        try {
            double[] expected = new double[rows.size()];
            double[] actual = new double[rows.size()];
            for (int i = 0; i < rows.size(); i++) {
                TestSupport.GklRow row = rows.get(i);
                double[] likelihood = new double[1];
                hmm.computeLikelihoods(new ReadDataHolder[] {row.read()}, new HaplotypeDataHolder[] {row.hap()},
                        likelihood);
                expected[i] = row.expected();
                actual[i] = likelihood[0];
            }
            TestSupport.assertClose("gkl-pairhmm-testdata.txt (" + (useDouble ? "double" : "float") + ")", expected,
                    actual, TestSupport.TOLERANCE);
        } finally {
            hmm.done();
        }
    }

    @Test
    public void gklTestDataEveryRow() throws Exception {
        everyGklRow(false);
    }

    @Test
    public void gklTestDataEveryRowDoublePrecision() throws Exception {
        everyGklRow(true);
    }

    @Test
    public void tenSecondsDataSetPerRecord() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        PairHMMNativeBinding hmm = loaded(false);
        try {
            for (TestSupport.Record rec : records) {
                double[] likelihoods = new double[rec.reads().length * rec.haps().length];
                hmm.computeLikelihoods(rec.reads(), rec.haps(), likelihoods);
                TestSupport.assertClose("10s.in record at line " + rec.line(), rec.expected(), likelihoods,
                        TestSupport.TOLERANCE);
            }
        } finally {
            hmm.done();
        }
    }
}
