package org.warpdp.client;

/**
 * Parameters of an X-drop extension, as Python's {@code warpdp.xdrop} takes them: seed length {@code k},
 * X-drop {@code x}, linear scores {@code match > 0 > mismatch, gap}, and what to report. The compact
 * constructor checks them ({@link IllegalArgumentException}).
 *
 * <pre>{@code
 * XdropParams.of(17, 100)                                   // match 1, mismatch -1, gap -1, LONGEST
 * XdropParams.of(17, 100).withScores(2, -3, -5).withReport(XdropParams.Report.BEST)
 * }</pre>
 */
public record XdropParams(int k, long x, int match, int mismatch, int gap, Report report) {

    /** What each pair's result describes. */
    public enum Report {
        /** SeqAn's longest extension and its score, as BELLA and LOGAN report it. */
        LONGEST,
        /** The best-scoring cell of each direction (classic X-drop). */
        BEST
    }

    public XdropParams {
        if (k < 1) {
            throw new IllegalArgumentException("k (the seed length) must be at least 1, not " + k);
        }
        if (x < 0 || x > (1L << 62)) {
            throw new IllegalArgumentException("x (the X-drop) must be within 0..2^62, not " + x);
        }
        if (match <= 0 || mismatch >= 0 || gap >= 0) {
            throw new IllegalArgumentException("scores must have match > 0 > mismatch, gap (got match " + match
                    + ", mismatch " + mismatch + ", gap " + gap + ")");
        }
        // The server takes scores within -(2^31 - 1)..2^31 - 1, as int32 negates.
        if (mismatch == Integer.MIN_VALUE) {
            throw new IllegalArgumentException("mismatch must be within -2147483647..-1, not " + mismatch);
        }
        if (gap == Integer.MIN_VALUE) {
            throw new IllegalArgumentException("gap must be within -2147483647..-1, not " + gap);
        }
        if (report == null) {
            throw new IllegalArgumentException("report must be LONGEST or BEST");
        }
    }

    /** Seed length k and X-drop x with the default scores (match 1, mismatch -1, gap -1) and LONGEST. */
    public static XdropParams of(int k, long x) {
        return new XdropParams(k, x, 1, -1, -1, Report.LONGEST);
    }

    public XdropParams withScores(int newMatch, int newMismatch, int newGap) {
        return new XdropParams(k, x, newMatch, newMismatch, newGap, report);
    }

    public XdropParams withReport(Report newReport) {
        return new XdropParams(k, x, match, mismatch, gap, newReport);
    }

    /**
     * DP cells pair {@code i} counts against the server's limits: X-drop's work depends on the data, so the
     * server counts, per seed direction with m and n bases beyond the seed,
     * {@code min(m * n, (m + n) * (2 * x / (match - 2 * gap) + 1))} (see {@code Limits} in warpdp.proto).
     */
    public long cells(XdropPairs pairs, int i) {
        long d = match - 2L * gap;
        long width = Math.min(x / d * 2 + x % d * 2 / d + 1, 1L << 31); // 2x / d + 1 without overflowing
        long[][] flanks = {{pairs.hPos()[i], pairs.vPos()[i]},
            {pairs.hLength(i) - pairs.hPos()[i] - k, pairs.vLength(i) - pairs.vPos()[i] - k}};
        long total = 0;
        for (long[] f : flanks) {
            total += Math.min(f[0] * f[1], (f[0] + f[1]) * width);
        }
        return total;
    }
}
