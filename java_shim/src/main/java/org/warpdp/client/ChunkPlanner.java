package org.warpdp.client;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a job into request messages that each stay within a cell and a byte budget, such that
 * concatenating the messages' results gives the job's result. X-drop and seed-extension jobs are
 * independent pairs, so any run of consecutive pairs is a message ({@link #pairRanges}); Pair-HMM jobs
 * need more care ({@link #plan}):
 *
 * <p>Why the order survives: a batch's results are read-major, so any run of consecutive reads against
 * all of the batch's haplotypes is a contiguous slice of them, and so is one read against a run of
 * consecutive haplotypes. A batch is therefore cut into pieces of consecutive reads (a GATK region is one
 * batch, so this is "splitting by reads"), and a single read too large for the budget is cut by
 * haplotypes. Pieces are then packed, in order, into as few messages as the budget allows.
 */
public final class ChunkPlanner {

    /** Reads {@code r0..r1-1} of batch {@code batch} against its haplotypes {@code h0..h1-1}. */
    public record Piece(int batch, int r0, int r1, int h0, int h1) {
        public long pairs() {
            return (long) (r1 - r0) * (h1 - h0);
        }
    }

    private ChunkPlanner() {
    }

    /**
     * The job as request messages of at most {@code maxCells} DP cells and about {@code maxBytes} bytes
     * (request and reply) each; the job itself when it fits. A single pair larger than the budget still
     * travels alone (the server then decides).
     */
    public static List<PairHmmBatches> plan(PairHmmBatches job, long maxCells, long maxBytes) {
        if (maxCells <= 0 || maxBytes <= 0) {
            throw new IllegalArgumentException("the cell and byte budgets must be > 0");
        }
        if (job.cells() <= maxCells && job.requestBytes() <= maxBytes && 8 * job.nPairs() <= maxBytes) {
            return List.of(job);
        }
        List<PairHmmBatches> chunks = new ArrayList<>();
        List<Piece> chunk = new ArrayList<>();
        long cells = 0;
        long bytes = 0;
        for (Piece p : pieces(job, maxCells, maxBytes)) {
            long pCells = cells(job, p);
            long pBytes = bytes(job, p);
            if (!chunk.isEmpty() && (cells + pCells > maxCells || bytes + pBytes > maxBytes)) {
                chunks.add(gather(job, chunk));
                chunk = new ArrayList<>();
                cells = 0;
                bytes = 0;
            }
            chunk.add(p);
            cells += pCells;
            bytes += pBytes;
        }
        if (!chunk.isEmpty()) {
            chunks.add(gather(job, chunk));
        }
        return chunks;
    }

    /** The job cut into pieces within the budget, in result order; batches without pairs are left out. */
    public static List<Piece> pieces(PairHmmBatches job, long maxCells, long maxBytes) {
        List<Piece> out = new ArrayList<>();
        for (int b = 0; b < job.nBatches(); b++) {
            int r0 = (int) job.batchReads()[b];
            int r1 = (int) job.batchReads()[b + 1];
            int h0 = (int) job.batchHaps()[b];
            int h1 = (int) job.batchHaps()[b + 1];
            if (r0 == r1 || h0 == h1) {
                continue;
            }
            int start = r0;
            for (int r = r0; r < r1; r++) {
                Piece alone = new Piece(b, r, r + 1, h0, h1);
                if (!fits(job, alone, maxCells, maxBytes)) {
                    if (start < r) {
                        out.add(new Piece(b, start, r, h0, h1));
                    }
                    splitByHaplotypes(job, alone, maxCells, maxBytes, out);
                    start = r + 1;
                } else if (!fits(job, new Piece(b, start, r + 1, h0, h1), maxCells, maxBytes)) {
                    out.add(new Piece(b, start, r, h0, h1));
                    start = r;
                }
            }
            if (start < r1) {
                out.add(new Piece(b, start, r1, h0, h1));
            }
        }
        return out;
    }

    private static void splitByHaplotypes(PairHmmBatches job, Piece read, long maxCells, long maxBytes,
                                          List<Piece> out) {
        int start = read.h0();
        for (int h = read.h0() + 1; h < read.h1(); h++) {
            if (!fits(job, new Piece(read.batch(), read.r0(), read.r1(), start, h + 1), maxCells, maxBytes)) {
                out.add(new Piece(read.batch(), read.r0(), read.r1(), start, h));
                start = h;
            }
        }
        out.add(new Piece(read.batch(), read.r0(), read.r1(), start, read.h1()));
    }

    private static boolean fits(PairHmmBatches job, Piece p, long maxCells, long maxBytes) {
        return cells(job, p) <= maxCells && bytes(job, p) <= maxBytes;
    }

    private static long readBytes(PairHmmBatches job, Piece p) {
        return job.readOffsets()[p.r1()] - job.readOffsets()[p.r0()];
    }

    private static long hapBytes(PairHmmBatches job, Piece p) {
        return job.hapOffsets()[p.h1()] - job.hapOffsets()[p.h0()];
    }

    static long cells(PairHmmBatches job, Piece p) {
        return readBytes(job, p) * hapBytes(job, p);
    }

    // Request bytes plus the reply's 8 bytes per pair: both must stay under the message limit.
    static long bytes(PairHmmBatches job, Piece p) {
        return 5 * readBytes(job, p) + 8L * (p.r1() - p.r0()) + hapBytes(job, p) + 8L * (p.h1() - p.h0())
                + 16 + 8 * p.pairs();
    }

    /**
     * Consecutive pair ranges {@code {from, to}} of at most {@code maxCells} cells and about {@code maxBytes}
     * bytes each, {@code cells[i]} and {@code bytes[i]} being pair i's (bytes: request and reply). A single
     * pair larger than the budget still travels alone (the server then decides).
     */
    public static List<int[]> pairRanges(long[] cells, long[] bytes, long maxCells, long maxBytes) {
        if (maxCells <= 0 || maxBytes <= 0) {
            throw new IllegalArgumentException("the cell and byte budgets must be > 0");
        }
        List<int[]> ranges = new ArrayList<>();
        int from = 0;
        long c = 0;
        long b = 0;
        for (int i = 0; i < cells.length; i++) {
            if (i > from && (c + cells[i] > maxCells || b + bytes[i] > maxBytes)) {
                ranges.add(new int[] {from, i});
                from = i;
                c = 0;
                b = 0;
            }
            c += cells[i];
            b += bytes[i];
        }
        if (from < cells.length) {
            ranges.add(new int[] {from, cells.length});
        }
        return ranges;
    }

    /** One message holding the given pieces, each as its own batch, in order. */
    public static PairHmmBatches gather(PairHmmBatches job, List<Piece> pieces) {
        int nReads = 0;
        int nHaps = 0;
        long readLen = 0;
        long hapLen = 0;
        for (Piece p : pieces) {
            nReads += p.r1() - p.r0();
            nHaps += p.h1() - p.h0();
            readLen += readBytes(job, p);
            hapLen += hapBytes(job, p);
        }
        byte[][] readSrc = {job.readBases(), job.readQuals(), job.readIns(), job.readDel(), job.readGcp()};
        byte[][] readDst = new byte[5][Math.toIntExact(readLen)];
        byte[] hapDst = new byte[Math.toIntExact(hapLen)];
        long[] readOffsets = new long[nReads + 1];
        long[] hapOffsets = new long[nHaps + 1];
        long[] batchReads = new long[pieces.size() + 1];
        long[] batchHaps = new long[pieces.size() + 1];
        int ri = 0;
        int hi = 0;
        int rPos = 0;
        int hPos = 0;
        for (int i = 0; i < pieces.size(); i++) {
            Piece p = pieces.get(i);
            int from = (int) job.readOffsets()[p.r0()];
            int len = (int) readBytes(job, p);
            for (int k = 0; k < 5; k++) {
                System.arraycopy(readSrc[k], from, readDst[k], rPos, len);
            }
            for (int r = p.r0(); r < p.r1(); r++) {
                readOffsets[ri + 1] = readOffsets[ri] + job.readLength(r);
                ri++;
            }
            rPos += len;
            int hFrom = (int) job.hapOffsets()[p.h0()];
            int hLen = (int) hapBytes(job, p);
            System.arraycopy(job.hapBases(), hFrom, hapDst, hPos, hLen);
            for (int h = p.h0(); h < p.h1(); h++) {
                hapOffsets[hi + 1] = hapOffsets[hi] + job.hapLength(h);
                hi++;
            }
            hPos += hLen;
            batchReads[i + 1] = ri;
            batchHaps[i + 1] = hi;
        }
        return new PairHmmBatches(readDst[0], readDst[1], readDst[2], readDst[3], readDst[4], readOffsets, hapDst,
                hapOffsets, batchReads, batchHaps);
    }
}
