package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.Test;
import org.warpdp.client.ChunkPlanner;
import org.warpdp.client.PairHmmBatches;

/** The request plan keeps the result order and the budget (no server needed). */
public class ChunkPlannerTest {

    private static byte[] randomBytes(Random rnd, int n, String alphabet) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) alphabet.charAt(rnd.nextInt(alphabet.length()));
        }
        return b;
    }

    private static PairHmmBatches randomJob(Random rnd) {
        PairHmmBatches.Builder b = PairHmmBatches.builder();
        int batches = 1 + rnd.nextInt(5);
        for (int k = 0; k < batches; k++) {
            int reads = rnd.nextInt(30);
            int haps = rnd.nextInt(6);
            for (int h = 0; h < haps; h++) {
                b.addHaplotype(randomBytes(rnd, 1 + rnd.nextInt(400), "ACGT"));
            }
            for (int r = 0; r < reads; r++) {
                int len = 1 + rnd.nextInt(250);
                b.addRead(randomBytes(rnd, len, "ACGTN"), randomBytes(rnd, len, "#+5?I"), randomBytes(rnd, len, "-"),
                        randomBytes(rnd, len, "-"), randomBytes(rnd, len, "+"));
            }
            b.endBatch();
        }
        return b.build();
    }

    // A stand-in for the server: one value per pair that depends on the read and haplotype contents.
    private static double[] fakeScores(PairHmmBatches job) {
        List<Double> out = new ArrayList<>();
        for (int b = 0; b < job.nBatches(); b++) {
            for (long r = job.batchReads()[b]; r < job.batchReads()[b + 1]; r++) {
                for (long h = job.batchHaps()[b]; h < job.batchHaps()[b + 1]; h++) {
                    int rs = (int) job.readOffsets()[(int) r];
                    int re = (int) job.readOffsets()[(int) r + 1];
                    int hs = (int) job.hapOffsets()[(int) h];
                    int he = (int) job.hapOffsets()[(int) h + 1];
                    out.add((double) Arrays.hashCode(Arrays.copyOfRange(job.readBases(), rs, re)) * 31
                            + Arrays.hashCode(Arrays.copyOfRange(job.readQuals(), rs, re)) * 7
                            + Arrays.hashCode(Arrays.copyOfRange(job.hapBases(), hs, he)));
                }
            }
        }
        return out.stream().mapToDouble(Double::doubleValue).toArray();
    }

    @Test
    public void chunksConcatenateToTheJobResultWithinBudget() {
        Random rnd = new Random(42);
        for (int trial = 0; trial < 200; trial++) {
            PairHmmBatches job = randomJob(rnd);
            double[] expected = fakeScores(job);
            long maxCells = 1 + (long) rnd.nextInt(4) * rnd.nextInt(200_000);
            long maxBytes = 200 + rnd.nextInt(20_000);
            List<PairHmmBatches> chunks = ChunkPlanner.plan(job, maxCells, maxBytes);
            double[] actual = chunks.stream().map(ChunkPlannerTest::fakeScores).flatMapToDouble(Arrays::stream)
                    .toArray();
            assertEquals("trial " + trial, expected.length, actual.length);
            for (int i = 0; i < expected.length; i++) {
                assertEquals("trial " + trial + " value " + i, expected[i], actual[i], 0.0);
            }
            for (PairHmmBatches c : chunks) {
                boolean single = c.nPairs() == 1;
                assertTrue("trial " + trial + ": " + c + " over " + maxCells + " cells",
                        single || c.cells() <= maxCells);
                assertTrue("trial " + trial + ": no empty chunks", c == job || c.nPairs() > 0);
            }
        }
    }

    @Test
    public void aJobThatFitsIsSentAsIs() {
        PairHmmBatches job = randomJob(new Random(1));
        assertSame(job, ChunkPlanner.plan(job, Long.MAX_VALUE, Long.MAX_VALUE).get(0));
    }

    @Test
    public void packedArraysAreChecked() {
        byte[] b = {'A', 'C'};
        long[] offs = {0, 2};
        long[] batch = {0, 1};
        new PairHmmBatches(b, b, b, b, b, offs, b, offs, batch, batch); // consistent
        assertThrows(IllegalArgumentException.class,
                () -> new PairHmmBatches(b, new byte[1], b, b, b, offs, b, offs, batch, batch));
        assertThrows(IllegalArgumentException.class,
                () -> new PairHmmBatches(b, b, b, b, b, new long[] {0, 1}, b, offs, batch, batch));
        assertThrows(IllegalArgumentException.class,
                () -> new PairHmmBatches(b, b, b, b, b, new long[] {0, 0, 2}, b, offs, new long[] {0, 2}, batch));
        assertThrows(IllegalArgumentException.class,
                () -> new PairHmmBatches(b, b, b, b, b, offs, b, offs, new long[] {0, 1}, new long[] {0, 1, 1}));
        assertThrows(NullPointerException.class,
                () -> new PairHmmBatches(b, b, b, b, null, offs, b, offs, batch, batch));
        assertThrows(IllegalArgumentException.class, () -> PairHmmBatches.builder().addHaplotype(new byte[0]));
        PairHmmBatches empty = PairHmmBatches.builder().build();
        assertEquals(0, empty.nPairs());
        assertEquals(0, empty.nBatches());
    }

    @Test
    public void pairRangesAreConsecutiveAndWithinTheBudget() {
        long[] cells = {5, 5, 5, 50, 1, 1, 1, 1, 0};
        long[] bytes = {10, 10, 10, 10, 10, 10, 10, 10, 10};
        List<int[]> ranges = ChunkPlanner.pairRanges(cells, bytes, 10, 30);
        // Budget 10 cells / 30 bytes; the 50-cell pair travels alone.
        assertEquals("[[0, 2], [2, 3], [3, 4], [4, 7], [7, 9]]",
                Arrays.deepToString(ranges.toArray(new int[0][])));
        assertEquals(1, ChunkPlanner.pairRanges(cells, bytes, 1000, 1000).size());
        assertEquals(0, ChunkPlanner.pairRanges(new long[0], new long[0], 10, 10).size());
        assertThrows(IllegalArgumentException.class, () -> ChunkPlanner.pairRanges(cells, bytes, 0, 10));
    }
}
