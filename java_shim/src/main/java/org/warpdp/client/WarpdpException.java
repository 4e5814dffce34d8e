package org.warpdp.client;

/**
 * A call to a warpdp server failed. {@link #code()} is the gRPC status code name ("UNAVAILABLE",
 * "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "DEADLINE_EXCEEDED", ...), so callers need
 * no gRPC classes (those stay private to the jar).
 */
public class WarpdpException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String code;

    public WarpdpException(String code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public WarpdpException(String code, String message) {
        this(code, message, null);
    }

    public String code() {
        return code;
    }

    /** The server could not be reached or is shutting down; the call may succeed when retried. */
    public boolean isUnavailable() {
        return "UNAVAILABLE".equals(code);
    }
}
