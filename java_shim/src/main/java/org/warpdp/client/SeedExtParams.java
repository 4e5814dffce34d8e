package org.warpdp.client;

/**
 * Parameters of a seed extension, as Python's {@code warpdp.SeedExtParams} (BWA-MEM's names and defaults,
 * {@link #BWA_MEM}): match score {@code a}, mismatch penalty {@code b} (pairs with N score -1), deletion and
 * insertion open / extend penalties (a gap of length l costs o + l * e), band width {@code w}, end bonus and
 * z-drop (0 disables it). The compact constructor checks the ranges ({@link IllegalArgumentException}).
 */
public record SeedExtParams(int a, int b, int oDel, int eDel, int oIns, int eIns, int w, int endBonus, int zdrop) {

    /** BWA-MEM's defaults: a=1, b=4, o_del=o_ins=6, e_del=e_ins=1, w=100, end_bonus=5, zdrop=100. */
    public static final SeedExtParams BWA_MEM = new SeedExtParams(1, 4, 6, 1, 6, 1, 100, 5, 100);

    public SeedExtParams {
        check("a", a, 0, 127);
        check("b", b, 0, 127);
        check("o_del", oDel, 0, 16383);
        check("e_del", eDel, 1, 16383);
        check("o_ins", oIns, 0, 16383);
        check("e_ins", eIns, 1, 16383);
        check("w", w, 0, Integer.MAX_VALUE);
        check("end_bonus", endBonus, 0, SeedExtPairs.MAX_SCORE);
        check("zdrop", zdrop, 0, SeedExtPairs.MAX_SCORE);
    }

    private static void check(String name, int value, int low, int high) {
        if (value < low || value > high) {
            throw new IllegalArgumentException(name + " must be within " + low + ".." + high + ", not " + value);
        }
    }

    /**
     * DP cells pair {@code i} counts against the server's limits: ksw_extend2's band, target length x
     * min(query length, 2 w' + 1), w' being w narrowed (as BWA does) to the longest gap that could pay off.
     */
    public long cells(SeedExtPairs pairs, int i) {
        long qlen = pairs.queryLength(i);
        long band = w;
        for (int[] oe : new int[][] {{oIns, eIns}, {oDel, eDel}}) {
            long longest = (long) ((double) (qlen * a + endBonus - oe[0]) / oe[1] + 1.0); // C's (int): toward 0
            band = Math.min(band, Math.max(longest, 1));
        }
        return pairs.targetLength(i) * Math.min(qlen, 2 * band + 1);
    }
}
