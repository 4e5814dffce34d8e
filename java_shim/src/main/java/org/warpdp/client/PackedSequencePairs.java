package org.warpdp.client;

import java.util.Objects;

/**
 * What the packed pair types share ({@link QueryTargetPairs}, {@link SeedExtPairs}): a query and a target per
 * pair, each family's sequences concatenated with their offsets. Pair {@code i}'s query is
 * {@code query[queryOffsets[i] .. queryOffsets[i+1])} and its target {@code target[targetOffsets[i] ..
 * targetOffsets[i+1])}. The arrays are used as given, not copied.
 */
public abstract class PackedSequencePairs {
    private final byte[] query;
    private final long[] queryOffsets;
    private final byte[] target;
    private final long[] targetOffsets;

    /** Checks the layout of {@code nPairs} pairs ({@link IllegalArgumentException}, NullPointerException). */
    PackedSequencePairs(byte[] query, long[] queryOffsets, byte[] target, long[] targetOffsets, int nPairs) {
        this.query = Objects.requireNonNull(query, "query");
        this.target = Objects.requireNonNull(target, "target");
        this.queryOffsets = PackedArrays.offsets("queryOffsets", queryOffsets, nPairs, query.length);
        this.targetOffsets = PackedArrays.offsets("targetOffsets", targetOffsets, nPairs, target.length);
    }

    public byte[] query() {
        return query;
    }

    public long[] queryOffsets() {
        return queryOffsets;
    }

    public byte[] target() {
        return target;
    }

    public long[] targetOffsets() {
        return targetOffsets;
    }

    public int nPairs() {
        return queryOffsets.length - 1;
    }

    public long queryLength(int i) {
        return queryOffsets[i + 1] - queryOffsets[i];
    }

    public long targetLength(int i) {
        return targetOffsets[i + 1] - targetOffsets[i];
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + nPairs() + " pairs, " + query.length + " + " + target.length
                + " bases]";
    }
}
