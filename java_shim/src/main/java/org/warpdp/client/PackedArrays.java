package org.warpdp.client;

import java.util.Arrays;
import java.util.Objects;

/** Checks and growable buffers shared by the packed-pairs classes ({@link XdropPairs}, {@link SeedExtPairs}). */
final class PackedArrays {
    private PackedArrays() {
    }

    /** Offsets of {@code n} sequences over {@code length} bytes: n + 1 values from 0 to length, never decreasing. */
    static long[] offsets(String name, long[] offsets, int n, long length) {
        Objects.requireNonNull(offsets, name);
        if (offsets.length != n + 1) {
            throw new IllegalArgumentException(name + " has " + offsets.length + " values; " + n
                    + " pairs need " + (n + 1));
        }
        if (offsets[0] != 0 || offsets[n] != length) {
            throw new IllegalArgumentException(name + " must start at 0 and end at " + length + " (got "
                    + offsets[0] + " .. " + offsets[n] + ")");
        }
        for (int i = 1; i <= n; i++) {
            if (offsets[i] < offsets[i - 1]) {
                throw new IllegalArgumentException(name + " must never decrease; value " + i + " is " + offsets[i]
                        + " after " + offsets[i - 1]);
            }
        }
        return offsets;
    }

    /** Bytes {@code offsets[from] .. offsets[to]} of {@code data}. */
    static byte[] slice(byte[] data, long[] offsets, int from, int to) {
        return Arrays.copyOfRange(data, (int) offsets[from], (int) offsets[to]);
    }

    /** {@code offsets[from..to]} shifted to start at 0. */
    static long[] sliceOffsets(long[] offsets, int from, int to) {
        long[] out = new long[to - from + 1];
        for (int i = from; i <= to; i++) {
            out[i - from] = offsets[i] - offsets[from];
        }
        return out;
    }

    static final class Bytes {
        private byte[] data = new byte[256];
        private int size;

        void add(byte[] bytes) {
            if (size + bytes.length > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, size + bytes.length));
            }
            System.arraycopy(bytes, 0, data, size, bytes.length);
            size += bytes.length;
        }

        int size() {
            return size;
        }

        byte[] toArray() {
            return Arrays.copyOf(data, size);
        }
    }

    static final class Longs {
        private long[] data = new long[16];
        private int size;

        void add(long value) {
            if (size == data.length) {
                data = Arrays.copyOf(data, data.length * 2);
            }
            data[size++] = value;
        }

        int size() {
            return size;
        }

        long[] toArray() {
            return Arrays.copyOf(data, size);
        }
    }
}
