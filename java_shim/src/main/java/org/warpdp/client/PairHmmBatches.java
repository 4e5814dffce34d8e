package org.warpdp.client;

import java.util.Objects;

/**
 * Many Pair-HMM batches in packed form, the layout of {@code warpdp.v1.PairHmmBatches}: the bases and four
 * quality arrays of all reads concatenated, with offsets; the haplotypes likewise; and per batch a range of
 * reads and a range of haplotypes. Every read of a batch is scored against every haplotype of that batch;
 * results come batch after batch, read-major inside a batch.
 *
 * <p>Qualities are raw phred values (not phred+33). The constructor checks the layout and throws
 * {@link IllegalArgumentException} for inconsistent arrays. The arrays are used as given, not copied:
 * do not change them while a call uses them. {@link #builder()} assembles the arrays from single reads.
 */
public final class PairHmmBatches {
    private final byte[] readBases;
    private final byte[] readQuals;
    private final byte[] readIns;
    private final byte[] readDel;
    private final byte[] readGcp;
    private final long[] readOffsets;
    private final byte[] hapBases;
    private final long[] hapOffsets;
    private final long[] batchReads;
    private final long[] batchHaps;

    public PairHmmBatches(byte[] readBases, byte[] readQuals, byte[] readIns, byte[] readDel, byte[] readGcp,
                          long[] readOffsets, byte[] hapBases, long[] hapOffsets, long[] batchReads,
                          long[] batchHaps) {
        this.readBases = Objects.requireNonNull(readBases, "readBases");
        this.readQuals = sameLength("readQuals", readQuals, readBases.length);
        this.readIns = sameLength("readIns", readIns, readBases.length);
        this.readDel = sameLength("readDel", readDel, readBases.length);
        this.readGcp = sameLength("readGcp", readGcp, readBases.length);
        this.readOffsets = checkOffsets("readOffsets", readOffsets, readBases.length, true);
        this.hapBases = Objects.requireNonNull(hapBases, "hapBases");
        this.hapOffsets = checkOffsets("hapOffsets", hapOffsets, hapBases.length, true);
        this.batchReads = checkOffsets("batchReads", batchReads, readOffsets.length - 1, false);
        this.batchHaps = checkOffsets("batchHaps", batchHaps, hapOffsets.length - 1, false);
        if (batchReads.length != batchHaps.length) {
            throw new IllegalArgumentException("batchReads has " + batchReads.length + " values but batchHaps "
                    + batchHaps.length + "; both need n_batches + 1");
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    public byte[] readBases() {
        return readBases;
    }

    public byte[] readQuals() {
        return readQuals;
    }

    public byte[] readIns() {
        return readIns;
    }

    public byte[] readDel() {
        return readDel;
    }

    public byte[] readGcp() {
        return readGcp;
    }

    public long[] readOffsets() {
        return readOffsets;
    }

    public byte[] hapBases() {
        return hapBases;
    }

    public long[] hapOffsets() {
        return hapOffsets;
    }

    public long[] batchReads() {
        return batchReads;
    }

    public long[] batchHaps() {
        return batchHaps;
    }

    public int nReads() {
        return readOffsets.length - 1;
    }

    public int nHaps() {
        return hapOffsets.length - 1;
    }

    public int nBatches() {
        return batchReads.length - 1;
    }

    /** Number of likelihoods the job yields (the length of its result). */
    public long nPairs() {
        long pairs = 0;
        for (int b = 0; b < nBatches(); b++) {
            pairs += (batchReads[b + 1] - batchReads[b]) * (batchHaps[b + 1] - batchHaps[b]);
        }
        return pairs;
    }

    /** DP cells: sum over pairs of read length times haplotype length. */
    public long cells() {
        long cells = 0;
        for (int b = 0; b < nBatches(); b++) {
            long readLen = readOffsets[(int) batchReads[b + 1]] - readOffsets[(int) batchReads[b]];
            long hapLen = hapOffsets[(int) batchHaps[b + 1]] - hapOffsets[(int) batchHaps[b]];
            cells += readLen * hapLen;
        }
        return cells;
    }

    /** Close upper bound of the encoded request size in bytes. */
    public long requestBytes() {
        return 5L * readBases.length + 8L * readOffsets.length + hapBases.length + 8L * hapOffsets.length
                + 16L * batchReads.length + 64;
    }

    public int readLength(int r) {
        return (int) (readOffsets[r + 1] - readOffsets[r]);
    }

    public int hapLength(int h) {
        return (int) (hapOffsets[h + 1] - hapOffsets[h]);
    }

    @Override
    public String toString() {
        return "PairHmmBatches[" + nBatches() + " batches, " + nReads() + " reads, " + nHaps() + " haplotypes, "
                + nPairs() + " pairs, " + cells() + " cells]";
    }

    private static byte[] sameLength(String name, byte[] array, int length) {
        Objects.requireNonNull(array, name);
        if (array.length != length) {
            throw new IllegalArgumentException(name + " has " + array.length + " bytes but readBases has "
                    + length + "; every read quality array must match its bases");
        }
        return array;
    }

    private static long[] checkOffsets(String name, long[] offsets, long end, boolean strictlyIncreasing) {
        Objects.requireNonNull(offsets, name);
        if (offsets.length == 0 || offsets[0] != 0 || offsets[offsets.length - 1] != end) {
            throw new IllegalArgumentException(name + " must start at 0 and end at " + end + " (got "
                    + (offsets.length == 0 ? "no values" : offsets[0] + " .. " + offsets[offsets.length - 1])
                    + ")");
        }
        for (int i = 1; i < offsets.length; i++) {
            if (offsets[i] < offsets[i - 1] || (strictlyIncreasing && offsets[i] == offsets[i - 1])) {
                throw new IllegalArgumentException(name + " must " + (strictlyIncreasing
                        ? "increase strictly (reads and haplotypes are never empty)" : "never decrease")
                        + "; value " + i + " is " + offsets[i] + " after " + offsets[i - 1]);
            }
        }
        return offsets;
    }

    /**
     * Appends reads and haplotypes to the current batch; {@link #endBatch()} closes it. {@link #build()}
     * closes a batch still open.
     */
    public static final class Builder {
        private final PackedArrays.Bytes readBases = new PackedArrays.Bytes();
        private final PackedArrays.Bytes readQuals = new PackedArrays.Bytes();
        private final PackedArrays.Bytes readIns = new PackedArrays.Bytes();
        private final PackedArrays.Bytes readDel = new PackedArrays.Bytes();
        private final PackedArrays.Bytes readGcp = new PackedArrays.Bytes();
        private final PackedArrays.Bytes hapBases = new PackedArrays.Bytes();
        private final PackedArrays.Longs readOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs hapOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs batchReads = new PackedArrays.Longs();
        private final PackedArrays.Longs batchHaps = new PackedArrays.Longs();
        private boolean open;

        private Builder() {
            readOffsets.add(0);
            hapOffsets.add(0);
            batchReads.add(0);
            batchHaps.add(0);
        }

        /** Adds a read (raw phred qualities, each array as long as {@code bases}) to the current batch. */
        public Builder addRead(byte[] bases, byte[] quals, byte[] ins, byte[] del, byte[] gcp) {
            Objects.requireNonNull(bases, "bases");
            if (bases.length == 0) {
                throw new IllegalArgumentException("a read must have at least one base");
            }
            sameLength("quals", quals, bases.length);
            sameLength("ins", ins, bases.length);
            sameLength("del", del, bases.length);
            sameLength("gcp", gcp, bases.length);
            readBases.add(bases);
            readQuals.add(quals);
            readIns.add(ins);
            readDel.add(del);
            readGcp.add(gcp);
            readOffsets.add(readBases.size());
            open = true;
            return this;
        }

        /** Adds a haplotype to the current batch. */
        public Builder addHaplotype(byte[] bases) {
            Objects.requireNonNull(bases, "bases");
            if (bases.length == 0) {
                throw new IllegalArgumentException("a haplotype must have at least one base");
            }
            hapBases.add(bases);
            hapOffsets.add(hapBases.size());
            open = true;
            return this;
        }

        /** Closes the current batch (an empty batch is allowed and yields no likelihoods). */
        public Builder endBatch() {
            batchReads.add(readOffsets.size() - 1);
            batchHaps.add(hapOffsets.size() - 1);
            open = false;
            return this;
        }

        public PairHmmBatches build() {
            if (open) {
                endBatch();
            }
            return new PairHmmBatches(readBases.toArray(), readQuals.toArray(), readIns.toArray(),
                    readDel.toArray(), readGcp.toArray(), readOffsets.toArray(), hapBases.toArray(),
                    hapOffsets.toArray(), batchReads.toArray(), batchHaps.toArray());
        }
    }
}
