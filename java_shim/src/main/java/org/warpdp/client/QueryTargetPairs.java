package org.warpdp.client;

import java.util.Objects;

/**
 * Query/target pairs in packed form, for alignment ({@link WarpdpClient#align}) and edit distance
 * ({@link WarpdpClient#edit}): the layout of {@code warpdp.v1.AlignPairs} and {@code warpdp.v1.EditPairs}
 * (Python's {@code warpdp.AlignPairs} / {@code warpdp.EditPairs}). Pair {@code i} is
 * {@code query[queryOffsets[i] .. queryOffsets[i+1])} against {@code target[targetOffsets[i] ..
 * targetOffsets[i+1])}, ASCII bytes. No sequence may be empty.
 *
 * <p>The constructor checks the layout ({@link IllegalArgumentException}); the arrays are used as given,
 * not copied. {@link #builder()} packs single pairs.
 */
public final class QueryTargetPairs extends PackedSequencePairs {
    public QueryTargetPairs(byte[] query, long[] queryOffsets, byte[] target, long[] targetOffsets) {
        super(query, queryOffsets, target, targetOffsets, pairsOf(queryOffsets));
        for (int i = 0; i < nPairs(); i++) {
            if (queryLength(i) == 0 || targetLength(i) == 0) {
                throw new IllegalArgumentException("pair " + i + ": the " + (queryLength(i) == 0 ? "query" : "target")
                        + " is empty");
            }
        }
    }

    // The pairs queryOffsets holds (it has n_pairs + 1 values).
    private static int pairsOf(long[] queryOffsets) {
        int n = Objects.requireNonNull(queryOffsets, "queryOffsets").length - 1;
        if (n < 0) {
            throw new IllegalArgumentException("queryOffsets must hold n_pairs + 1 values, not none");
        }
        return n;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The longest query or target. */
    public long longest() {
        long most = 0;
        for (int i = 0; i < nPairs(); i++) {
            most = Math.max(most, Math.max(queryLength(i), targetLength(i)));
        }
        return most;
    }

    /** Pairs {@code from .. to-1} as a new packed set (copies). */
    public QueryTargetPairs select(int from, int to) {
        return new QueryTargetPairs(PackedArrays.slice(query(), queryOffsets(), from, to),
                PackedArrays.sliceOffsets(queryOffsets(), from, to),
                PackedArrays.slice(target(), targetOffsets(), from, to),
                PackedArrays.sliceOffsets(targetOffsets(), from, to));
    }

    /** Query x target: the DP cells pair {@code i} counts against the server's limits. */
    long cells(int i) {
        return queryLength(i) * targetLength(i);
    }

    /** Bytes pair {@code i} adds to a request message: its bases and two int64 offsets. */
    long requestBytes(int i) {
        return queryLength(i) + targetLength(i) + 16;
    }

    /** Appends pairs: {@code add(query, target)}, then {@link #build()}. */
    public static final class Builder {
        private final PackedArrays.Bytes query = new PackedArrays.Bytes();
        private final PackedArrays.Bytes target = new PackedArrays.Bytes();
        private final PackedArrays.Longs queryOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs targetOffsets = new PackedArrays.Longs();

        private Builder() {
            queryOffsets.add(0);
            targetOffsets.add(0);
        }

        public Builder add(byte[] querySeq, byte[] targetSeq) {
            query.add(Objects.requireNonNull(querySeq, "query"));
            target.add(Objects.requireNonNull(targetSeq, "target"));
            queryOffsets.add(query.size());
            targetOffsets.add(target.size());
            return this;
        }

        public QueryTargetPairs build() {
            return new QueryTargetPairs(query.toArray(), queryOffsets.toArray(), target.toArray(),
                    targetOffsets.toArray());
        }
    }
}
