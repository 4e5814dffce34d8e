package org.warpdp.client;

/**
 * What ksw_extend2 returns for each pair, in input order (Python's {@code warpdp.SeedExtResults}): best
 * {@code score} (h0 when nothing beats the seed), {@code qle} / {@code tle} the query / target length of the
 * best extension, {@code gtle} the target length where the extension reaching the query end scores best,
 * {@code gscore} that score (-1: never reached), {@code maxOff} the largest distance from the diagonal.
 */
public record SeedExtResults(int[] score, int[] qle, int[] tle, int[] gtle, int[] gscore, int[] maxOff) {

    /** Room for the results of {@code n} pairs. */
    public static SeedExtResults allocate(int n) {
        return new SeedExtResults(new int[n], new int[n], new int[n], new int[n], new int[n], new int[n]);
    }

    public int nPairs() {
        return score.length;
    }

    /** Pair {@code i} as {@code score qle tle gtle gscore max_off}, the layout of the CLI's output lines. */
    public String line(int i) {
        return score[i] + " " + qle[i] + " " + tle[i] + " " + gtle[i] + " " + gscore[i] + " " + maxOff[i];
    }
}
