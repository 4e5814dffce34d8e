package com.google.common.base;

/** Decoy for IsolationTest: an application's own, incompatible guava on the class path. */
public final class Preconditions {
    public static final String DECOY = "decoy";

    private Preconditions() {
    }
}
