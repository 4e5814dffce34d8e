package org.warpdp.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * How to reach a warpdp server. Immutable; equal options share one channel in the GATK binding.
 *
 * <p>{@link #fromEnvironment()} reads each setting from a system property, else from the environment
 * variable of the same name in upper case with '.' replaced by '_' (e.g. {@code warpdp.address} /
 * {@code WARPDP_ADDRESS}):
 * <ul>
 *   <li>{@code warpdp.address}: {@code host:port}, {@code [v6]:port}, a gRPC target such as
 *       {@code dns:///name:port}, or a comma-separated list of {@code host:port} spread round-robin
 *       (default {@value #DEFAULT_ADDRESS})</li>
 *   <li>{@code warpdp.token}, or {@code warpdp.token.file} (first non-comment line of a file, so the token
 *       stays out of {@code ps}): sent as {@code authorization: Bearer <token>}</li>
 *   <li>{@code warpdp.tls} ({@code true}/{@code false}) and {@code warpdp.tls.ca} (PEM trust roots; default:
 *       the JVM's)</li>
 *   <li>{@code warpdp.deadline.ms}: per call (default {@value #DEFAULT_DEADLINE_MS}; 0 = none)</li>
 *   <li>{@code warpdp.connect.timeout.ms}: health check and server info (default
 *       {@value #DEFAULT_CONNECT_TIMEOUT_MS})</li>
 *   <li>{@code warpdp.max.cells}: DP cells per request message; larger jobs are split (default 0 = the
 *       server's own limit)</li>
 *   <li>{@code warpdp.retries}: retries of a call that failed with UNAVAILABLE (default
 *       {@value #DEFAULT_RETRIES})</li>
 * </ul>
 */
public record ClientOptions(List<String> addresses, String token, boolean tls, String tlsCaFile,
                            long deadlineMillis, long connectTimeoutMillis, long maxCellsPerRequest,
                            int retries) {

    public static final String DEFAULT_ADDRESS = "127.0.0.1:50051";
    public static final long DEFAULT_DEADLINE_MS = 600_000;
    public static final long DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
    public static final int DEFAULT_RETRIES = 2;

    public ClientOptions {
        addresses = List.copyOf(Objects.requireNonNull(addresses, "addresses"));
        if (addresses.isEmpty()) {
            throw new IllegalArgumentException("no server address given");
        }
        for (String a : addresses) {
            checkAddress(a, addresses.size() > 1);
        }
        if (token != null && (token.isEmpty() || token.chars().anyMatch(Character::isWhitespace))) {
            throw new IllegalArgumentException("the bearer token must be non-empty and contain no white space");
        }
        if (deadlineMillis < 0) {
            throw new IllegalArgumentException("deadlineMillis must be >= 0, not " + deadlineMillis);
        }
        if (connectTimeoutMillis <= 0) {
            throw new IllegalArgumentException("connectTimeoutMillis must be > 0, not " + connectTimeoutMillis);
        }
        if (maxCellsPerRequest < 0) {
            throw new IllegalArgumentException("maxCellsPerRequest must be >= 0, not " + maxCellsPerRequest);
        }
        if (retries < 0) {
            throw new IllegalArgumentException("retries must be >= 0, not " + retries);
        }
    }

    /** Defaults for one server address. */
    public static ClientOptions of(String address) {
        return new ClientOptions(splitAddresses(address), null, false, null, DEFAULT_DEADLINE_MS,
                DEFAULT_CONNECT_TIMEOUT_MS, 0, DEFAULT_RETRIES);
    }

    /** Settings from system properties and environment variables (see the class comment). */
    public static ClientOptions fromEnvironment() {
        String token = setting("warpdp.token");
        String tokenFile = setting("warpdp.token.file");
        if (token == null && tokenFile != null) {
            token = readTokenFile(Path.of(tokenFile));
        }
        return new ClientOptions(
                splitAddresses(Objects.requireNonNullElse(setting("warpdp.address"), DEFAULT_ADDRESS)),
                token,
                Boolean.parseBoolean(Objects.requireNonNullElse(setting("warpdp.tls"), "false")),
                setting("warpdp.tls.ca"),
                longSetting("warpdp.deadline.ms", DEFAULT_DEADLINE_MS),
                longSetting("warpdp.connect.timeout.ms", DEFAULT_CONNECT_TIMEOUT_MS),
                longSetting("warpdp.max.cells", 0),
                intSetting("warpdp.retries", DEFAULT_RETRIES));
    }

    public ClientOptions withToken(String newToken) {
        return new ClientOptions(addresses, newToken, tls, tlsCaFile, deadlineMillis, connectTimeoutMillis,
                maxCellsPerRequest, retries);
    }

    public ClientOptions withTls(boolean useTls, String caFile) {
        return new ClientOptions(addresses, token, useTls, caFile, deadlineMillis, connectTimeoutMillis,
                maxCellsPerRequest, retries);
    }

    public ClientOptions withMaxCellsPerRequest(long cells) {
        return new ClientOptions(addresses, token, tls, tlsCaFile, deadlineMillis, connectTimeoutMillis,
                cells, retries);
    }

    public ClientOptions withTimeouts(long deadlineMs, long connectTimeoutMs) {
        return new ClientOptions(addresses, token, tls, tlsCaFile, deadlineMs, connectTimeoutMs,
                maxCellsPerRequest, retries);
    }

    public ClientOptions withRetries(int n) {
        return new ClientOptions(addresses, token, tls, tlsCaFile, deadlineMillis, connectTimeoutMillis,
                maxCellsPerRequest, n);
    }

    /** The addresses as one string, as given in {@code warpdp.address}. */
    public String target() {
        return String.join(",", addresses);
    }

    // Never print the token: options end up in logs and exception messages.
    @Override
    public String toString() {
        return "ClientOptions[address=" + target() + ", token=" + (token == null ? "none" : "***")
                + ", tls=" + tls + (tlsCaFile == null ? "" : " (ca " + tlsCaFile + ")")
                + ", deadlineMs=" + deadlineMillis + ", connectTimeoutMs=" + connectTimeoutMillis
                + ", maxCellsPerRequest=" + (maxCellsPerRequest == 0 ? "server limit" : maxCellsPerRequest)
                + ", retries=" + retries + "]";
    }

    static List<String> splitAddresses(String text) {
        List<String> out = new ArrayList<>();
        for (String part : text.split(",")) {
            if (!part.isBlank()) {
                out.add(part.strip());
            }
        }
        return out;
    }

    private static void checkAddress(String address, boolean inList) {
        if (address.contains(":///") || address.startsWith("unix:")) {
            if (inList) {
                throw new IllegalArgumentException("a list of servers must hold host:port entries, not gRPC "
                        + "targets such as " + address + "; use a single dns:///name:port target instead");
            }
            return;
        }
        int colon = address.lastIndexOf(':');
        boolean bracketed = address.startsWith("[");
        boolean ok = colon > 0 && colon < address.length() - 1
                && (!bracketed || address.lastIndexOf(']') == colon - 1)
                && address.substring(colon + 1).chars().allMatch(Character::isDigit)
                && address.length() - colon - 1 <= 5;  // so parseInt cannot overflow
        if (ok) {
            int port = Integer.parseInt(address.substring(colon + 1));
            ok = port > 0 && port < 65536;
        }
        if (!ok) {
            throw new IllegalArgumentException("server address '" + address
                    + "' must be host:port, [IPv6]:port or a gRPC target such as dns:///name:port");
        }
    }

    private static String setting(String property) {
        String value = System.getProperty(property);
        if (value == null) {
            value = System.getenv(property.toUpperCase(Locale.ROOT).replace('.', '_'));
        }
        return value == null || value.isBlank() ? null : value.strip();
    }

    private static int intSetting(String property, int fallback) {
        long value = longSetting(property, fallback);
        if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {  // a cast would wrap it silently
            throw new IllegalArgumentException(property + " must be within " + Integer.MIN_VALUE + ".."
                    + Integer.MAX_VALUE + ", not " + value);
        }
        return (int) value;
    }

    private static long longSetting(String property, long fallback) {
        String value = setting(property);
        if (value == null) {
            return fallback;
        }
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(property + " must be a whole number, not '" + value + "'");
        }
    }

    private static String readTokenFile(Path file) {
        try {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                String t = line.strip();
                if (!t.isEmpty() && !t.startsWith("#")) {
                    return t;
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the token file " + file + ": " + e.getMessage(), e);
        }
        throw new IllegalArgumentException("the token file " + file + " holds no token");
    }
}
