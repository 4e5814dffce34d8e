package org.warpdp.client;

import java.util.Objects;

/**
 * Seed extensions in packed form: the layout of {@code warpdp.v1.SeedExtPairs} (and of Python's
 * {@code warpdp.SeedExtPairs}). Pair {@code i} extends {@code query[queryOffsets[i] .. queryOffsets[i+1])}
 * (the read past a seed) against {@code target[targetOffsets[i] .. targetOffsets[i+1])} (the reference
 * window) from a seed scoring {@code h0[i]}, as BWA-MEM's {@code ksw_extend2}. Bases are ASCII A, C, G, T
 * (either case); any other byte is N. Sequences may be empty.
 *
 * <p>The constructor checks the layout ({@link IllegalArgumentException}); the arrays are used as given,
 * not copied. {@link #builder()} packs single pairs.
 */
public final class SeedExtPairs extends PackedSequencePairs {
    /** Largest h0 (and score) ksw_extend2's arithmetic allows. */
    public static final int MAX_SCORE = 1 << 30;

    private final int[] h0;

    public SeedExtPairs(byte[] query, long[] queryOffsets, byte[] target, long[] targetOffsets, int[] h0) {
        super(query, queryOffsets, target, targetOffsets, Objects.requireNonNull(h0, "h0").length);
        this.h0 = h0;
        for (int i = 0; i < h0.length; i++) {
            if (h0[i] < 0 || h0[i] > MAX_SCORE) {
                throw new IllegalArgumentException("h0 of pair " + i + " must be within 0.." + MAX_SCORE + ", not "
                        + h0[i]);
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    public int[] h0() {
        return h0;
    }

    /** Pairs {@code from .. to-1} as a new packed set (copies). */
    public SeedExtPairs select(int from, int to) {
        int[] h = new int[to - from];
        System.arraycopy(h0, from, h, 0, h.length);
        return new SeedExtPairs(PackedArrays.slice(query(), queryOffsets(), from, to),
                PackedArrays.sliceOffsets(queryOffsets(), from, to),
                PackedArrays.slice(target(), targetOffsets(), from, to),
                PackedArrays.sliceOffsets(targetOffsets(), from, to), h);
    }

    /** Bytes pair {@code i} adds to a request message: its bases and three int64 values. */
    long requestBytes(int i) {
        return queryLength(i) + targetLength(i) + 24;
    }

    /** Appends pairs: {@code add(query, target, h0)}, then {@link #build()}. */
    public static final class Builder {
        private final PackedArrays.Bytes query = new PackedArrays.Bytes();
        private final PackedArrays.Bytes target = new PackedArrays.Bytes();
        private final PackedArrays.Longs queryOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs targetOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs h0 = new PackedArrays.Longs();

        private Builder() {
            queryOffsets.add(0);
            targetOffsets.add(0);
        }

        public Builder add(byte[] querySeq, byte[] targetSeq, int seedScore) {
            query.add(Objects.requireNonNull(querySeq, "query"));
            target.add(Objects.requireNonNull(targetSeq, "target"));
            queryOffsets.add(query.size());
            targetOffsets.add(target.size());
            h0.add(seedScore);
            return this;
        }

        public SeedExtPairs build() {
            long[] seeds = h0.toArray();
            int[] h = new int[seeds.length];
            for (int i = 0; i < h.length; i++) {
                h[i] = (int) seeds[i];
            }
            return new SeedExtPairs(query.toArray(), queryOffsets.toArray(), target.toArray(),
                    targetOffsets.toArray(), h);
        }
    }
}
