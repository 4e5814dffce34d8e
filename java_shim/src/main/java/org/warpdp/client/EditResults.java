package org.warpdp.client;

/**
 * Edit-distance results, per pair in input order (Python's {@code warpdp.EditResults}): {@code distance}
 * (-1 above k), the first optimal location's target span {@code [targetBegin, targetEnd)} (0-based, end
 * exclusive; -1 above k), with task PATH the CIGAR as packed ops ({@code length << 4 | op}, SAM's codes,
 * {@code = X I D}), and with tasks LOCATIONS and PATH every optimal location ({@code locationBegins[i][j]},
 * {@code locationEnds[i][j]}); the arrays not asked for are null.
 */
public record EditResults(long[] distance, long[] targetBegin, long[] targetEnd, int[][] cigars,
                          long[][] locationBegins, long[][] locationEnds) {

    /** Room for the results of {@code n} pairs of a job with these parameters. */
    public static EditResults allocate(int n, EditParams params) {
        boolean locations = params.task() != EditParams.Task.DISTANCE;
        return new EditResults(new long[n], new long[n], new long[n],
                params.task() == EditParams.Task.PATH ? new int[n][] : null,
                locations ? new long[n][] : null, locations ? new long[n][] : null);
    }

    public int nPairs() {
        return distance.length;
    }

    /** Pair {@code i}'s CIGAR string ("" when it has none, as above k). */
    public String cigarString(int i) {
        if (cigars == null) {
            throw new IllegalStateException("these results carry no CIGAR: use task PATH");
        }
        return AlignResults.cigarString(cigars[i]);
    }
}
