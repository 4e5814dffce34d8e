package org.warpdp.client;

/**
 * Alignment results, one value per pair in input order (Python's {@code warpdp.AlignResults}): {@code score},
 * the aligned spans {@code [queryBegin, queryEnd)} and {@code [targetBegin, targetEnd)} (0-based, end
 * exclusive; GATK mode: {@code targetBegin} is GKL's alignment offset) and, when asked for, each pair's CIGAR
 * as packed ops ({@code length << 4 | op}, SAM's op codes M I D N S H P = X as 0..8); null without CIGARs.
 */
public record AlignResults(long[] score, long[] queryBegin, long[] queryEnd, long[] targetBegin, long[] targetEnd,
                           int[][] cigars) {

    /** SAM's CIGAR op letters by code. */
    public static final String OPS = "MIDNSHP=X";

    /** Room for the results of {@code n} pairs (with room for CIGARs when {@code withCigars}). */
    public static AlignResults allocate(int n, boolean withCigars) {
        return new AlignResults(new long[n], new long[n], new long[n], new long[n], new long[n],
                withCigars ? new int[n][] : null);
    }

    public int nPairs() {
        return score.length;
    }

    public boolean hasCigars() {
        return cigars != null;
    }

    /** Pair {@code i}'s packed CIGAR ops. */
    public int[] cigar(int i) {
        if (cigars == null) {
            throw new IllegalStateException("these results carry no CIGAR: align with cigar = true");
        }
        return cigars[i];
    }

    /** Pair {@code i}'s CIGAR string ("" when it has no ops). */
    public String cigarString(int i) {
        return cigarString(cigar(i));
    }

    /** The CIGAR string of packed ops ("" for none). */
    public static String cigarString(int[] ops) {
        StringBuilder s = new StringBuilder();
        for (int op : ops) {
            s.append(op >>> 4).append(OPS.charAt(op & 0xF));
        }
        return s.toString();
    }

    /** Pair {@code i} as {@code score query_begin query_end target_begin target_end [cigar]}. */
    public String line(int i) {
        String columns = score[i] + " " + queryBegin[i] + " " + queryEnd[i] + " " + targetBegin[i] + " " + targetEnd[i];
        return cigars == null ? columns : columns + " " + cigarString(i);
    }
}
