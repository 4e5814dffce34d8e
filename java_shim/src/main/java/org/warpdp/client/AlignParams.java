package org.warpdp.client;

import java.util.Arrays;
import java.util.Locale;

/**
 * Parameters of an alignment, as Python's {@code warpdp.AlignParams} (same names, defaults and checks;
 * docs/align.md has the semantics): the mode, match/mismatch scores or a 5x5 matrix over A C G T N,
 * gaps (penalties, positive, subtracted; GATK mode: GATK's negative values, added), the gap-cost
 * convention, the extension z-drop, GATK's overhang strategy, and whether to return CIGARs. The
 * constructor checks the ranges ({@link IllegalArgumentException}) as the server would.
 *
 * <pre>{@code
 * AlignParams.DEFAULT                                                   // global affine 2/-3, open 5, extend 2
 * AlignParams.of(AlignParams.Mode.LOCAL).withScores(1, -4).withGaps(6, 1).withCigar(true)
 * AlignParams.gatk(200, -150, -260, -11, AlignParams.Overhang.SOFTCLIP)  // GKL's Smith-Waterman
 * }</pre>
 */
public record AlignParams(Mode mode, int match, int mismatch, int[] matrix, Gaps gaps, int gapOpen, int gapExtend,
                          GapConvention gapConvention, Integer zdrop, Overhang overhang, boolean cigar) {

    /** The server's bound on any score parameter (int32 DP values never overflow). */
    public static final int MAX_PARAMETER = 65536;

    /** Global, match 2, mismatch -3, affine gaps open 5 extend 2 with convention L-1, no CIGAR. */
    public static final AlignParams DEFAULT = new AlignParams(Mode.GLOBAL, 2, -3, null, Gaps.AFFINE, 5, 2,
            GapConvention.L_MINUS_1, null, Overhang.SOFTCLIP, false);

    /** Alignment modes (the wire names are the lower-case names). */
    public enum Mode {
        GLOBAL, SEMIGLOBAL, LOCAL, EXTENSION,
        /** GKL's {@code IntelSmithWaterman.align(ref = target, alt = query, ...)} exactly. */
        GATK;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public enum Gaps {
        AFFINE, LINEAR;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A gap of length L costs open + (L-1) * extend ({@code L_MINUS_1}) or open + L * extend ({@code L}). */
    public enum GapConvention {
        L_MINUS_1("L-1"), L("L");

        private final String wire;

        GapConvention(String wire) {
            this.wire = wire;
        }

        public String wireName() {
            return wire;
        }
    }

    /** GATK's {@code SWOverhangStrategy}, in its order. */
    public enum Overhang {
        SOFTCLIP, INDEL, LEADING_INDEL, IGNORE
    }

    public AlignParams {
        if (mode == null || gaps == null || gapConvention == null || overhang == null) {
            throw new IllegalArgumentException("mode, gaps, gapConvention and overhang must not be null");
        }
        check("match", match);
        check("mismatch", mismatch);
        check("gap_open", gapOpen);
        check("gap_extend", gapExtend);
        if (mode == Mode.GATK) {
            if (match <= 0) {
                throw new IllegalArgumentException("match must be positive, not " + match);
            }
            nonPositive("mismatch", mismatch);
            nonPositive("gap_open", gapOpen);
            nonPositive("gap_extend", gapExtend);
        } else {
            if (matrix == null && match <= 0) {
                throw new IllegalArgumentException("match must be positive, not " + match);
            }
            if (matrix == null && mismatch >= 0) {
                throw new IllegalArgumentException("mismatch must be negative, not " + mismatch);
            }
            if (gapOpen < 0 || gapExtend < 0) {
                throw new IllegalArgumentException((gapOpen < 0 ? "gap_open" : "gap_extend")
                        + " must be >= 0 (a penalty, subtracted), not " + Math.min(gapOpen, gapExtend));
            }
            if (gaps == Gaps.AFFINE && gapConvention == GapConvention.L_MINUS_1 && gapOpen < gapExtend) {
                throw new IllegalArgumentException("gap_open (" + gapOpen + ") must be at least gap_extend ("
                        + gapExtend + ") with gap_convention L-1");
            }
        }
        if (zdrop != null) {
            if (zdrop < 0) {
                throw new IllegalArgumentException("zdrop must be within 0..2147483647, not " + zdrop);
            }
            if (mode != Mode.EXTENSION) {
                throw new IllegalArgumentException("zdrop applies to mode extension only, not " + mode.wireName());
            }
        }
        if (matrix != null) {
            if (matrix.length != 25) {
                throw new IllegalArgumentException("matrix must hold 25 values (5x5, rows = query A C G T N, columns"
                        + " = target A C G T N), not " + matrix.length);
            }
            matrix = matrix.clone();
            for (int v : matrix) {
                if (Math.abs((long) v) > MAX_PARAMETER) {
                    throw new IllegalArgumentException("matrix entries must be within -" + MAX_PARAMETER + ".."
                            + MAX_PARAMETER + ", not " + v);
                }
            }
        }
    }

    private static void check(String name, int value) {
        if (Math.abs((long) value) > MAX_PARAMETER) {
            throw new IllegalArgumentException(name + " must be within -" + MAX_PARAMETER + ".." + MAX_PARAMETER
                    + ", not " + value);
        }
    }

    private static void nonPositive(String name, int value) {
        if (value > 0) {
            throw new IllegalArgumentException(name + " must be <= 0 in mode gatk (GATK's SWParameters add it to"
                    + " the score), not " + value);
        }
    }

    /** The defaults in another mode. */
    public static AlignParams of(Mode mode) {
        return DEFAULT.withMode(mode);
    }

    /**
     * GKL's Smith-Waterman: {@code SWParameters(match, mismatch, gapOpen, gapExtend)} as GATK holds them
     * (match > 0, the others <= 0 and added), CIGARs on. HaplotypeCaller's sets: 200/-150/-260/-11,
     * 10/-15/-30/-5, 25/-50/-110/-6.
     */
    public static AlignParams gatk(int match, int mismatch, int gapOpen, int gapExtend, Overhang overhang) {
        return new AlignParams(Mode.GATK, match, mismatch, null, Gaps.AFFINE, gapOpen, gapExtend,
                GapConvention.L_MINUS_1, null, overhang, true);
    }

    public AlignParams withMode(Mode newMode) {
        return new AlignParams(newMode, match, mismatch, matrix, gaps, gapOpen, gapExtend, gapConvention, zdrop,
                overhang, cigar);
    }

    public AlignParams withScores(int newMatch, int newMismatch) {
        return new AlignParams(mode, newMatch, newMismatch, null, gaps, gapOpen, gapExtend, gapConvention, zdrop,
                overhang, cigar);
    }

    /** 25 scores, rows = query base A C G T N, columns = target base A C G T N. */
    public AlignParams withMatrix(int[] newMatrix) {
        return new AlignParams(mode, match, mismatch, newMatrix, gaps, gapOpen, gapExtend, gapConvention, zdrop,
                overhang, cigar);
    }

    /** Affine gaps with these penalties. */
    public AlignParams withGaps(int open, int extend) {
        return new AlignParams(mode, match, mismatch, matrix, Gaps.AFFINE, open, extend, gapConvention, zdrop,
                overhang, cigar);
    }

    /** Linear gaps: a gap of length L costs L * {@code extend}. */
    public AlignParams withLinearGaps(int extend) {
        return new AlignParams(mode, match, mismatch, matrix, Gaps.LINEAR, gapOpen, extend, gapConvention, zdrop,
                overhang, cigar);
    }

    public AlignParams withGapConvention(GapConvention newConvention) {
        return new AlignParams(mode, match, mismatch, matrix, gaps, gapOpen, gapExtend, newConvention, zdrop,
                overhang, cigar);
    }

    /** Extension mode's z-drop (null: none). */
    public AlignParams withZdrop(Integer newZdrop) {
        return new AlignParams(mode, match, mismatch, matrix, gaps, gapOpen, gapExtend, gapConvention, newZdrop,
                overhang, cigar);
    }

    public AlignParams withOverhang(Overhang newOverhang) {
        return new AlignParams(mode, match, mismatch, matrix, gaps, gapOpen, gapExtend, gapConvention, zdrop,
                newOverhang, cigar);
    }

    public AlignParams withCigar(boolean newCigar) {
        return new AlignParams(mode, match, mismatch, matrix, gaps, gapOpen, gapExtend, gapConvention, zdrop,
                overhang, newCigar);
    }

    /** The matrix (a copy), or null for match/mismatch scoring. */
    @Override
    public int[] matrix() {
        return matrix == null ? null : matrix.clone();
    }

    /** Whether the server keeps a traceback (a CIGAR is asked for, or GATK mode, whose result is one). */
    public boolean traceback() {
        return cigar || mode == Mode.GATK;
    }

    /** The largest parameter magnitude as the server bounds it: (query + target + 2) * largest <= 2^29. */
    long largestParameter() {
        if (mode == Mode.GATK) {
            return Math.max(Math.max(Math.abs((long) match), Math.abs((long) mismatch)),
                    Math.max(Math.abs((long) gapOpen), Math.abs((long) gapExtend)));
        }
        long largest = Math.max(Math.abs((long) match), Math.abs((long) mismatch));
        if (matrix != null) {
            largest = 0;
            for (int v : matrix) {
                largest = Math.max(largest, Math.abs((long) v));
            }
        }
        long firstGapBase = gaps == Gaps.LINEAR ? gapExtend
                : gapConvention == GapConvention.L ? (long) gapOpen + gapExtend : gapOpen;
        return Math.max(largest, firstGapBase);
    }

    /**
     * The server's int32 bound for pair {@code pair} of these lengths: (query + target + 2) times the largest
     * parameter magnitude must not exceed 2^29; IllegalArgumentException naming the pair otherwise.
     */
    public void checkLengths(int pair, long queryLength, long targetLength) {
        long largest = Math.max(largestParameter(), 1);
        long size = queryLength + targetLength + 2;
        if (size > (1L << 29) / largest) {
            throw new IllegalArgumentException("pair " + pair + ": query and target lengths (" + (size - 2)
                    + " bases together) are too long for int32 scores with a parameter of magnitude " + largest);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AlignParams p && mode == p.mode && match == p.match && mismatch == p.mismatch
                && Arrays.equals(matrix, p.matrix) && gaps == p.gaps && gapOpen == p.gapOpen
                && gapExtend == p.gapExtend && gapConvention == p.gapConvention
                && java.util.Objects.equals(zdrop, p.zdrop) && overhang == p.overhang && cigar == p.cigar;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(mode, match, mismatch, Arrays.hashCode(matrix), gaps, gapOpen, gapExtend,
                gapConvention, zdrop, overhang, cigar);
    }

    @Override
    public String toString() {
        return "AlignParams[mode=" + mode.wireName() + ", match=" + match + ", mismatch=" + mismatch
                + (matrix != null ? ", matrix=" + Arrays.toString(matrix) : "") + ", gaps=" + gaps.wireName()
                + ", gapOpen=" + gapOpen + ", gapExtend=" + gapExtend + ", gapConvention=" + gapConvention.wireName()
                + (zdrop != null ? ", zdrop=" + zdrop : "") + ", overhang=" + overhang + ", cigar=" + cigar + "]";
    }
}
