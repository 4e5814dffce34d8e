package org.warpdp.client;

/**
 * X-drop results, one value per pair in input order (Python's {@code warpdp.XdropResults}): {@code score}
 * = left + right + k * match; {@code [beginH, endH)} and {@code [beginV, endV)} the extended seed (0-based,
 * end exclusive); {@code cells} the DP cells computed for the pair.
 */
public record XdropResults(long[] score, long[] beginH, long[] endH, long[] beginV, long[] endV, long[] cells) {

    /** Room for the results of {@code n} pairs. */
    public static XdropResults allocate(int n) {
        return new XdropResults(new long[n], new long[n], new long[n], new long[n], new long[n], new long[n]);
    }

    public int nPairs() {
        return score.length;
    }

    /** Pair {@code i} as {@code score beginH endH beginV endV}, the layout of the CLI's output lines. */
    public String line(int i) {
        return score[i] + " " + beginH[i] + " " + endH[i] + " " + beginV[i] + " " + endV[i];
    }
}
