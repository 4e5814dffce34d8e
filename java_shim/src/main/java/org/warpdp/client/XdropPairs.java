package org.warpdp.client;

import java.util.Objects;

/**
 * Seeds to extend with X-drop, in packed form: the layout of {@code warpdp.v1.XdropPairs} (and of Python's
 * {@code warpdp.XdropPairs}). Pair {@code i} extends a seed of length k (an {@link XdropParams} value) that
 * starts at {@code hPos[i]} in {@code H = hBases[hOffsets[i] .. hOffsets[i+1])} (SeqAn's database,
 * "horizontal") and at {@code vPos[i]} in {@code V = vBases[vOffsets[i] .. vOffsets[i+1])} (the query).
 * Bases are ASCII A, C, G, T or N, either case (the server rejects other bytes, naming the pair).
 *
 * <p>The constructor checks the layout ({@link IllegalArgumentException}); the arrays are used as given,
 * not copied. {@link #builder()} packs single pairs.
 */
public final class XdropPairs {
    private final byte[] hBases;
    private final long[] hOffsets;
    private final byte[] vBases;
    private final long[] vOffsets;
    private final long[] hPos;
    private final long[] vPos;

    public XdropPairs(byte[] hBases, long[] hOffsets, byte[] vBases, long[] vOffsets, long[] hPos, long[] vPos) {
        this.hPos = Objects.requireNonNull(hPos, "hPos");
        this.vPos = Objects.requireNonNull(vPos, "vPos");
        int n = hPos.length;
        if (vPos.length != n) {
            throw new IllegalArgumentException("vPos has " + vPos.length + " values but hPos has " + n);
        }
        this.hBases = Objects.requireNonNull(hBases, "hBases");
        this.vBases = Objects.requireNonNull(vBases, "vBases");
        this.hOffsets = PackedArrays.offsets("hOffsets", hOffsets, n, hBases.length);
        this.vOffsets = PackedArrays.offsets("vOffsets", vOffsets, n, vBases.length);
        for (int i = 0; i < n; i++) {
            if (hPos[i] < 0 || vPos[i] < 0) {
                throw new IllegalArgumentException("the seed of pair " + i + " lies outside its sequences (hPos "
                        + hPos[i] + ", vPos " + vPos[i] + ")");
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    public byte[] hBases() {
        return hBases;
    }

    public long[] hOffsets() {
        return hOffsets;
    }

    public byte[] vBases() {
        return vBases;
    }

    public long[] vOffsets() {
        return vOffsets;
    }

    public long[] hPos() {
        return hPos;
    }

    public long[] vPos() {
        return vPos;
    }

    public int nPairs() {
        return hPos.length;
    }

    public long hLength(int i) {
        return hOffsets[i + 1] - hOffsets[i];
    }

    public long vLength(int i) {
        return vOffsets[i + 1] - vOffsets[i];
    }

    /** Throws {@link IllegalArgumentException} naming the first pair whose seed of length k leaves H or V. */
    public void checkSeeds(int k) {
        if (k < 1) {
            throw new IllegalArgumentException("k (the seed length) must be at least 1, not " + k);
        }
        for (int i = 0; i < nPairs(); i++) {
            // pos > length - k, not pos + k > length: a position near Long.MAX_VALUE would wrap.
            if (hPos[i] > hLength(i) - k || vPos[i] > vLength(i) - k) {
                throw new IllegalArgumentException("the seed of pair " + i + " lies outside its sequences: hPos "
                        + hPos[i] + " and vPos " + vPos[i] + " with k = " + k + " in H of " + hLength(i)
                        + " and V of " + vLength(i) + " bases");
            }
        }
    }

    /** Pairs {@code from .. to-1} as a new packed set (copies). */
    public XdropPairs select(int from, int to) {
        long[] h = new long[to - from];
        long[] v = new long[to - from];
        System.arraycopy(hPos, from, h, 0, h.length);
        System.arraycopy(vPos, from, v, 0, v.length);
        return new XdropPairs(PackedArrays.slice(hBases, hOffsets, from, to),
                PackedArrays.sliceOffsets(hOffsets, from, to), PackedArrays.slice(vBases, vOffsets, from, to),
                PackedArrays.sliceOffsets(vOffsets, from, to), h, v);
    }

    /** Bytes pair {@code i} adds to a request message: its bases and four int64 values. */
    long requestBytes(int i) {
        return hLength(i) + vLength(i) + 32;
    }

    @Override
    public String toString() {
        return "XdropPairs[" + nPairs() + " pairs, " + hBases.length + " + " + vBases.length + " bases]";
    }

    /** Appends pairs: {@code add(h, hPos, v, vPos)}, then {@link #build()}. */
    public static final class Builder {
        private final PackedArrays.Bytes hBases = new PackedArrays.Bytes();
        private final PackedArrays.Bytes vBases = new PackedArrays.Bytes();
        private final PackedArrays.Longs hOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs vOffsets = new PackedArrays.Longs();
        private final PackedArrays.Longs hPos = new PackedArrays.Longs();
        private final PackedArrays.Longs vPos = new PackedArrays.Longs();

        private Builder() {
            hOffsets.add(0);
            vOffsets.add(0);
        }

        /** A seed starting at {@code hPos} in {@code h} and at {@code vPos} in {@code v}. */
        public Builder add(byte[] h, long hPos, byte[] v, long vPos) {
            hBases.add(Objects.requireNonNull(h, "h"));
            vBases.add(Objects.requireNonNull(v, "v"));
            hOffsets.add(hBases.size());
            vOffsets.add(vBases.size());
            this.hPos.add(hPos);
            this.vPos.add(vPos);
            return this;
        }

        public XdropPairs build() {
            return new XdropPairs(hBases.toArray(), hOffsets.toArray(), vBases.toArray(), vOffsets.toArray(),
                    hPos.toArray(), vPos.toArray());
        }
    }
}
