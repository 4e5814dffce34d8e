package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.junit.function.ThrowingRunnable;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.SeedExtPairs;
import org.warpdp.client.SeedExtParams;
import org.warpdp.client.XdropPairs;
import org.warpdp.client.XdropParams;
import org.warpdp.gatk.WarpdpPairHmm;

/** GKL's argument checks: NullPointerException for nulls, IllegalArgumentException for inconsistent data. */
public class InputChecksTest {
    private static PairHMMNativeBinding hmm;

    @BeforeClass
    public static void load() {
        hmm = GklReferenceTest.loaded(false);
    }

    @AfterClass
    public static void done() {
        hmm.done();
    }

    private static ReadDataHolder[] reads(ReadDataHolder... r) {
        return r;
    }

    private static HaplotypeDataHolder[] haps(HaplotypeDataHolder... h) {
        return h;
    }

    private static void expect(Class<? extends Throwable> type, String messagePart, ThrowingRunnable call) {
        Throwable t = assertThrows(type, call);
        assertTrue("message '" + t.getMessage() + "' should mention " + messagePart,
                t.getMessage() != null && t.getMessage().contains(messagePart));
    }

    @Test
    public void nullArraysThrowNullPointerException() {
        ReadDataHolder[] r = reads(TestSupport.simpleRead());
        HaplotypeDataHolder[] h = haps(TestSupport.simpleHap());
        assertThrows(NullPointerException.class, () -> hmm.computeLikelihoods(null, h, new double[1]));
        assertThrows(NullPointerException.class, () -> hmm.computeLikelihoods(r, null, new double[1]));
        assertThrows(NullPointerException.class, () -> hmm.computeLikelihoods(r, h, null));
    }

    @Test
    public void nullElementsAndFieldsThrowNullPointerException() {
        HaplotypeDataHolder[] h = haps(TestSupport.simpleHap());
        expect(NullPointerException.class, "readDataArray[1]",
                () -> hmm.computeLikelihoods(reads(TestSupport.simpleRead(), null), h, new double[2]));
        expect(NullPointerException.class, "haplotypeDataArray[0]",
                () -> hmm.computeLikelihoods(reads(TestSupport.simpleRead()), haps((HaplotypeDataHolder) null),
                        new double[1]));
        HaplotypeDataHolder noBases = new HaplotypeDataHolder();
        expect(NullPointerException.class, "haplotypeBases",
                () -> hmm.computeLikelihoods(reads(TestSupport.simpleRead()), haps(noBases), new double[1]));
        String[] fields = {"readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP"};
        for (String field : fields) {
            ReadDataHolder read = TestSupport.simpleRead();
            switch (field) {
                case "readBases" -> read.readBases = null;
                case "readQuals" -> read.readQuals = null;
                case "insertionGOP" -> read.insertionGOP = null;
                case "deletionGOP" -> read.deletionGOP = null;
                default -> read.overallGCP = null;
            }
            expect(NullPointerException.class, "readDataArray[0]." + field,
                    () -> hmm.computeLikelihoods(reads(read), h, new double[1]));
        }
    }

    @Test
    public void wrongLikelihoodArrayLengthThrowsIllegalArgumentException() {
        ReadDataHolder[] r = reads(TestSupport.simpleRead(), TestSupport.simpleRead());
        HaplotypeDataHolder[] h = haps(TestSupport.simpleHap(), TestSupport.simpleHap(), TestSupport.simpleHap());
        expect(IllegalArgumentException.class, "likelihoodArray", () -> hmm.computeLikelihoods(r, h, new double[5]));
        expect(IllegalArgumentException.class, "likelihoodArray", () -> hmm.computeLikelihoods(r, h, new double[7]));
        expect(IllegalArgumentException.class, "likelihoodArray",
                () -> hmm.computeLikelihoods(reads(), h, new double[1]));
    }

    @Test
    public void qualityArraysOfAnotherLengthThrowIllegalArgumentException() {
        HaplotypeDataHolder[] h = haps(TestSupport.simpleHap());
        String[] fields = {"readQuals", "insertionGOP", "deletionGOP", "overallGCP"};
        for (String field : fields) {
            for (int length : new int[] {3, 5}) {
                ReadDataHolder read = TestSupport.simpleRead();
                byte[] wrong = new byte[length];
                java.util.Arrays.fill(wrong, (byte) 30);
                switch (field) {
                    case "readQuals" -> read.readQuals = wrong;
                    case "insertionGOP" -> read.insertionGOP = wrong;
                    case "deletionGOP" -> read.deletionGOP = wrong;
                    default -> read.overallGCP = wrong;
                }
                expect(IllegalArgumentException.class, "readDataArray[0]." + field,
                        () -> hmm.computeLikelihoods(reads(read), h, new double[1]));
            }
        }
    }

    @Test
    public void emptyReadsAndHaplotypesThrowIllegalArgumentException() {
        ReadDataHolder empty = TestSupport.simpleRead();
        empty.readBases = new byte[0];
        empty.readQuals = empty.insertionGOP = empty.deletionGOP = empty.overallGCP = new byte[0];
        expect(IllegalArgumentException.class, "empty",
                () -> hmm.computeLikelihoods(reads(empty), haps(TestSupport.simpleHap()), new double[1]));
        HaplotypeDataHolder emptyHap = new HaplotypeDataHolder();
        emptyHap.haplotypeBases = new byte[0];
        expect(IllegalArgumentException.class, "empty",
                () -> hmm.computeLikelihoods(reads(TestSupport.simpleRead()), haps(emptyHap), new double[1]));
    }

    @Test
    public void noReadsOrNoHaplotypesIsNothingToDo() {
        hmm.computeLikelihoods(reads(), haps(TestSupport.simpleHap()), new double[0]);
        hmm.computeLikelihoods(reads(TestSupport.simpleRead()), haps(), new double[0]);
    }

    @Test
    public void stillWorksAfterRejectedInput() {
        assertThrows(NullPointerException.class, () -> hmm.computeLikelihoods(null, null, null));
        double[] out = new double[1];
        hmm.computeLikelihoods(reads(TestSupport.simpleRead()), haps(TestSupport.simpleHap()), out);
        assertEquals(TestSupport.SIMPLE_EXPECTED, out[0], 1e-5);
    }

    @Test
    public void computingBeforeLoadThrowsIllegalStateException() {
        PairHMMNativeBinding fresh = new WarpdpPairHmm(ClientOptions.of(TestSupport.address()));
        fresh.initialize(null);
        expect(IllegalStateException.class, "load",
                () -> fresh.computeLikelihoods(reads(TestSupport.simpleRead()), haps(TestSupport.simpleHap()),
                        new double[1]));
    }

    // -- the client's packed inputs: integers from outside are range-checked without overflow --

    private static XdropPairs seedAt(long hPos, long vPos) {
        byte[] bases = "ACGTACGTAC".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        return new XdropPairs(bases, new long[] {0, 10}, bases, new long[] {0, 10}, new long[] {hPos},
                new long[] {vPos});
    }

    @Test
    public void xdropSeedsNearLongMaxAreRefusedWithoutOverflow() {
        expect(IllegalArgumentException.class, "hPos " + Long.MAX_VALUE,
                () -> seedAt(Long.MAX_VALUE, 0).checkSeeds(1));
        expect(IllegalArgumentException.class, "vPos " + Long.MAX_VALUE,
                () -> seedAt(0, Long.MAX_VALUE).checkSeeds(Integer.MAX_VALUE));
        expect(IllegalArgumentException.class, "with k = " + Integer.MAX_VALUE,
                () -> seedAt(1, 0).checkSeeds(Integer.MAX_VALUE));
        expect(IllegalArgumentException.class, "hPos", () -> seedAt(Long.MIN_VALUE, 0));
        expect(IllegalArgumentException.class, "k (the seed length)", () -> seedAt(0, 0).checkSeeds(0));
        seedAt(9, 9).checkSeeds(1);
    }

    @Test
    public void xdropParametersAreRangeChecked() {
        expect(IllegalArgumentException.class, "k (the seed length)", () -> XdropParams.of(Integer.MIN_VALUE, 5));
        expect(IllegalArgumentException.class, "x (the X-drop)", () -> XdropParams.of(3, Long.MAX_VALUE));
        expect(IllegalArgumentException.class, "x (the X-drop)", () -> XdropParams.of(3, -1));
        expect(IllegalArgumentException.class, "mismatch",
                () -> XdropParams.of(3, 5).withScores(1, Integer.MIN_VALUE, -1));
        expect(IllegalArgumentException.class, "gap", () -> XdropParams.of(3, 5).withScores(1, -1, Integer.MIN_VALUE));
    }

    @Test
    public void packedOffsetsOutOfRangeAreRefusedNamingTheField() {
        byte[] bases = new byte[] {'A', 'C'};
        expect(IllegalArgumentException.class, "hOffsets", () -> new XdropPairs(bases, new long[] {0, Long.MAX_VALUE},
                bases, new long[] {0, 2}, new long[] {0}, new long[] {0}));
        expect(IllegalArgumentException.class, "vOffsets", () -> new XdropPairs(bases, new long[] {0, 1, 2},
                bases, new long[] {0, Long.MIN_VALUE, 2}, new long[] {0, 0}, new long[] {0, 0}));
        expect(IllegalArgumentException.class, "queryOffsets",
                () -> new SeedExtPairs(bases, new long[] {0, -1, 2}, bases, new long[] {0, 1, 2}, new int[] {1, 1}));
        expect(IllegalArgumentException.class, "h0 of pair 0",
                () -> new SeedExtPairs(bases, new long[] {0, 2}, bases, new long[] {0, 2}, new int[] {-1}));
        expect(IllegalArgumentException.class, "h0 of pair 0",
                () -> new SeedExtPairs(bases, new long[] {0, 2}, bases, new long[] {0, 2},
                        new int[] {Integer.MAX_VALUE}));
        byte[] q = new byte[] {30, 30};
        expect(IllegalArgumentException.class, "batchReads", () -> new PairHmmBatches(bases, q, q, q, q,
                new long[] {0, 2}, bases, new long[] {0, 2}, new long[] {0, Long.MAX_VALUE}, new long[] {0, 1}));
        expect(IllegalArgumentException.class, "readOffsets", () -> new PairHmmBatches(bases, q, q, q, q,
                new long[] {0, Long.MIN_VALUE, 2}, bases, new long[] {0, 2}, new long[] {0, 2}, new long[] {0, 1}));
    }

    @Test
    public void seedExtensionParametersAreRangeChecked() {
        expect(IllegalArgumentException.class, "a must be within", () -> new SeedExtParams(128, 4, 6, 1, 6, 1, 100, 5,
                100));
        expect(IllegalArgumentException.class, "e_ins must be within", () -> new SeedExtParams(1, 4, 6, 1, 6,
                Integer.MIN_VALUE, 100, 5, 100));
        expect(IllegalArgumentException.class, "w must be within", () -> new SeedExtParams(1, 4, 6, 1, 6, 1, -1, 5,
                100));
        expect(IllegalArgumentException.class, "zdrop must be within", () -> new SeedExtParams(1, 4, 6, 1, 6, 1, 100,
                5, Integer.MAX_VALUE));
    }

    @Test
    public void clientOptionsNameTheFieldOutOfRange() {
        ClientOptions ok = ClientOptions.of("127.0.0.1:50051");
        expect(IllegalArgumentException.class, "deadlineMillis", () -> new ClientOptions(ok.addresses(), null, false,
                null, -1, 1000, 0, 0));
        expect(IllegalArgumentException.class, "connectTimeoutMillis", () -> new ClientOptions(ok.addresses(), null,
                false, null, 1000, 0, 0, 0));
        expect(IllegalArgumentException.class, "maxCellsPerRequest", () -> new ClientOptions(ok.addresses(), null,
                false, null, 1000, 1000, Long.MIN_VALUE, 0));
        expect(IllegalArgumentException.class, "retries", () -> new ClientOptions(ok.addresses(), null, false, null,
                1000, 1000, 0, Integer.MIN_VALUE));
        expect(IllegalArgumentException.class, "must be host:port", () -> ClientOptions.of("127.0.0.1:99999999999"));
        expect(IllegalArgumentException.class, "must be host:port", () -> ClientOptions.of("127.0.0.1:65536"));
    }
}
