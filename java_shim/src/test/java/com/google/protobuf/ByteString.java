package com.google.protobuf;

/** Decoy for IsolationTest: an application's own, incompatible protobuf on the class path. */
public final class ByteString {
    public static final String DECOY = "decoy";

    private ByteString() {
    }
}
