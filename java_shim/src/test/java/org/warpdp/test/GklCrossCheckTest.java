package org.warpdp.test;

import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.util.List;
import java.util.Random;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;
import org.warpdp.gatk.GklFallback;

/**
 * The real thing side by side: Intel GKL's native Pair-HMM (GKL's jar from Maven Central, loaded in a
 * class loader of its own because our jar shadows its class names) against the warpdp binding, on the
 * reference data and on random regions. Skipped where GKL is not installed or its native code does not
 * load (no AVX).
 */
public class GklCrossCheckTest {
    // The pom passes the path of GKL's jar from Maven Central (the version GATK 4.6.2.0 bundles).
    private static final File GKL_JAR = new File(System.getProperty("warpdp.test.gkl.jar", "-"));
    private static PairHMMNativeBinding gkl;
    private static boolean loaded;

    // One GKL instance: its native library can belong to one class loader only, and its precision setting is
    // global, so it is initialized again before every use.
    private static synchronized PairHMMNativeBinding realGkl(boolean useDouble) throws Exception {
        if (gkl == null) {
            assumeTrue("Intel GKL's jar (-Dwarpdp.test.gkl.jar) not found; skipping the cross-check",
                    GKL_JAR.isFile());
            // GKL's own classes, not ours of the same names (the shim's fallback loads them the same way).
            ClassLoader loader = GklFallback.isolatedLoader(GKL_JAR.toURI().toURL(),
                    GklCrossCheckTest.class.getClassLoader());
            PairHMMNativeBinding hmm = (PairHMMNativeBinding) loader.loadClass("com.intel.gkl.pairhmm.IntelPairHmm")
                    .getConstructor().newInstance();
            loaded = hmm.load(null);
            gkl = hmm;
        }
        assumeTrue("GKL's native Pair-HMM does not load here (no AVX?); skipping the cross-check", loaded);
        PairHMMNativeArguments args = new PairHMMNativeArguments();
        args.maxNumberOfThreads = 1;
        args.useDoublePrecision = useDouble;
        gkl.initialize(args);
        return gkl;
    }

    private static void compare(String what, ReadDataHolder[] reads, HaplotypeDataHolder[] haps, boolean useDouble,
                                PairHMMNativeBinding warpdp) throws Exception {
        double[] expected = new double[reads.length * haps.length];
        double[] actual = new double[expected.length];
        realGkl(useDouble).computeLikelihoods(reads, haps, expected);
        warpdp.computeLikelihoods(reads, haps, actual);
        TestSupport.assertClose(what + (useDouble ? " (double)" : " (float)"), expected, actual,
                useDouble ? 1e-6 : TestSupport.TOLERANCE);
    }

    @Test
    public void sameAsGklOnTheReferenceData() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        for (boolean useDouble : new boolean[] {false, true}) {
            PairHMMNativeBinding warpdp = GklReferenceTest.loaded(useDouble);
            try {
                for (TestSupport.Record rec : records) {
                    compare("10s.in line " + rec.line(), rec.reads(), rec.haps(), useDouble, warpdp);
                }
                for (TestSupport.GklRow row : TestSupport.gklRows()) {
                    compare("gkl-pairhmm-testdata.txt line " + row.line(), new ReadDataHolder[] {row.read()},
                            new HaplotypeDataHolder[] {row.hap()}, useDouble, warpdp);
                }
            } finally {
                warpdp.done();
            }
        }
    }

    @Test
    public void sameAsGklOnRandomRegions() throws Exception {
        Random rnd = new Random(7);
        for (boolean useDouble : new boolean[] {false, true}) {
            PairHMMNativeBinding warpdp = GklReferenceTest.loaded(useDouble);
            try {
                for (int region = 0; region < 40; region++) {
                    HaplotypeDataHolder[] haps = new HaplotypeDataHolder[1 + rnd.nextInt(6)];
                    byte[] base = randomBases(rnd, 20 + rnd.nextInt(380), 0.0);
                    for (int h = 0; h < haps.length; h++) {
                        haps[h] = new HaplotypeDataHolder();
                        haps[h].haplotypeBases = mutate(rnd, base, 0.02);
                    }
                    ReadDataHolder[] reads = new ReadDataHolder[1 + rnd.nextInt(25)];
                    for (int r = 0; r < reads.length; r++) {
                        int len = 1 + rnd.nextInt(Math.min(250, base.length));
                        int start = rnd.nextInt(base.length - len + 1);
                        byte[] bases = mutate(rnd, java.util.Arrays.copyOfRange(base, start, start + len), 0.05);
                        reads[r] = new ReadDataHolder();
                        reads[r].readBases = bases;
                        reads[r].readQuals = quals(rnd, len, 0, 70);
                        reads[r].insertionGOP = quals(rnd, len, 10, 60);
                        reads[r].deletionGOP = quals(rnd, len, 10, 60);
                        reads[r].overallGCP = quals(rnd, len, 5, 20);
                    }
                    compare("random region " + region, reads, haps, useDouble, warpdp);
                }
            } finally {
                warpdp.done();
            }
        }
    }

    private static byte[] randomBases(Random rnd, int n, double nRate) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = rnd.nextDouble() < nRate ? (byte) 'N' : (byte) "ACGT".charAt(rnd.nextInt(4));
        }
        return b;
    }

    // Substitutions, a few N bases and the odd lower-case base.
    private static byte[] mutate(Random rnd, byte[] src, double rate) {
        byte[] b = src.clone();
        for (int i = 0; i < b.length; i++) {
            double x = rnd.nextDouble();
            if (x < rate) {
                b[i] = (byte) "ACGT".charAt(rnd.nextInt(4));
            } else if (x < rate * 1.2) {
                b[i] = 'N';
            }
        }
        return b;
    }

    private static byte[] quals(Random rnd, int n, int min, int max) {
        byte[] q = new byte[n];
        for (int i = 0; i < n; i++) {
            q[i] = (byte) (min + rnd.nextInt(max - min + 1));
        }
        return q;
    }
}
