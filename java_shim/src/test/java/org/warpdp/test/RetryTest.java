package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.WarpdpException;

/**
 * gRPC's own retry policy (the channel's service config) repeats calls that fail with UNAVAILABLE, at most
 * {@code warpdp.retries} times, and nothing else. The server is tests/flaky_server.py: its ServerInfo fails
 * for the first N calls and then reports how many calls it saw.
 */
public class RetryTest {

    private interface WithServer {
        void run(String address) throws Exception;
    }

    private static void withFlakyServer(int failures, String code, WithServer body) throws Exception {
        String repo = System.getProperty("warpdp.test.repo");
        assumeTrue("-Dwarpdp.test.repo not set (the pom sets it)", repo != null);
        Process p = new ProcessBuilder("python3", "tests/flaky_server.py", Integer.toString(failures), code)
                .directory(new File(repo)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            String port = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            assertTrue("tests/flaky_server.py did not start", port != null && port.matches("\\d+"));
            body.run("127.0.0.1:" + port);
        } finally {
            p.getOutputStream().close();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    @Test
    public void unavailableIsRetriedByGrpc() throws Exception {
        withFlakyServer(ClientOptions.DEFAULT_RETRIES, "UNAVAILABLE", address -> {
            try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(address))) {
                assertEquals("flaky-test " + (ClientOptions.DEFAULT_RETRIES + 1), client.serverInfo().version());
            }
        });
    }

    @Test
    public void retriesAreBoundedBySetting() throws Exception {
        withFlakyServer(1, "UNAVAILABLE", address -> {
            try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(address).withRetries(0))) {
                WarpdpException e = assertThrows(WarpdpException.class, client::serverInfo);
                assertTrue(e.getMessage(), e.isUnavailable());
                assertEquals("the next call is the server's second", "flaky-test 2", client.serverInfo().version());
            }
        });
    }

    @Test
    public void otherErrorsAreNotRetried() throws Exception {
        withFlakyServer(1, "INTERNAL", address -> {
            try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(address))) {
                WarpdpException e = assertThrows(WarpdpException.class, client::serverInfo);
                assertEquals("INTERNAL", e.code());
                assertEquals("flaky-test 2", client.serverInfo().version());
            }
        });
    }
}
