package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.WarpdpException;
import org.warpdp.gatk.WarpdpPairHmm;

/** Bearer token and TLS against a second server started here with --token-file, --tls-cert and --tls-key. */
public class SecurityTest {
    private static final String TOKEN = "test-token-0123456789";
    private static Path dir;
    private static Process server;
    private static String address;
    private static String ca;

    @BeforeClass
    public static void startServer() throws Exception {
        String serve = System.getProperty("warpdp.test.serve");
        String repo = System.getProperty("warpdp.test.repo");
        assumeTrue("-Dwarpdp.test.serve and -Dwarpdp.test.repo not set (the pom sets them)",
                serve != null && repo != null);
        dir = Files.createTempDirectory("warpdp-security-test");
        Path tokenFile = dir.resolve("tokens");
        Files.writeString(tokenFile, "# accepted tokens\n" + TOKEN + "\n");
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key.toString(),
                "-out", cert.toString()).redirectErrorStream(true).redirectOutput(dir.resolve("openssl.log").toFile())
                .start();
        assertTrue("openssl failed; see " + dir.resolve("openssl.log"),
                openssl.waitFor(60, TimeUnit.SECONDS) && openssl.exitValue() == 0);
        ca = cert.toString();
        int port = TestSupport.freePort();
        address = "127.0.0.1:" + port;
        File log = dir.resolve("server.log").toFile();
        List<String> command = new ArrayList<>(List.of("bash", "-c", "exec " + serve + " \"$@\"", "serve",
                "--host", "127.0.0.1", "--port", Integer.toString(port), "--backend", "cpu",
                "--token-file", tokenFile.toString(), "--tls-cert", cert.toString(), "--tls-key", key.toString()));
        server = new ProcessBuilder(command).directory(new File(repo)).redirectErrorStream(true)
                .redirectOutput(log).start();
        Process started = server;
        Runtime.getRuntime().addShutdownHook(new Thread(started::destroy)); // also when the test JVM is killed
        // Health checks need no token; TLS they do need.
        try (WarpdpClient probe = WarpdpClient.connect(ClientOptions.of(address).withTls(true, ca))) {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!probe.isServing()) {
                if (!server.isAlive() || System.nanoTime() > until) {
                    throw new AssertionError("the TLS + token server did not start:\n" + Files.readString(log.toPath()));
                }
                Thread.sleep(200);
            }
        }
    }

    @AfterClass
    public static void stopServer() throws Exception {
        if (server != null) {
            server.destroy();
            if (!server.waitFor(15, TimeUnit.SECONDS)) {
                server.destroyForcibly().waitFor();
            }
        }
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static ClientOptions tls() {
        return ClientOptions.of(address).withTls(true, ca).withRetries(0);
    }

    @Test
    public void callsNeedTheToken() {
        try (WarpdpClient none = WarpdpClient.connect(tls());
             WarpdpClient wrong = WarpdpClient.connect(tls().withToken("not-the-token"));
             WarpdpClient right = WarpdpClient.connect(tls().withToken(TOKEN))) {
            assertEquals("UNAUTHENTICATED", assertThrows(WarpdpException.class, none::serverInfo).code());
            assertEquals("UNAUTHENTICATED", assertThrows(WarpdpException.class, wrong::serverInfo).code());
            assertTrue(right.serverInfo().tokenRequired());
        }
    }

    @Test
    public void bindingWithTokenFromProperties() throws IOException {
        Path tokenFile = dir.resolve("client-token");
        Files.writeString(tokenFile, TOKEN + "\n");
        String[] keys = {"warpdp.address", "warpdp.token.file", "warpdp.tls", "warpdp.tls.ca"};
        String[] saved = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            saved[i] = System.getProperty(keys[i]);
        }
        try {
            System.setProperty("warpdp.address", address);
            System.setProperty("warpdp.token.file", tokenFile.toString());
            System.setProperty("warpdp.tls", "true");
            System.setProperty("warpdp.tls.ca", ca);
            WarpdpPairHmm hmm = new WarpdpPairHmm();
            assertTrue(hmm.load(null));
            hmm.initialize(null);
            double[] out = new double[1];
            hmm.computeLikelihoods(new ReadDataHolder[] {TestSupport.simpleRead()},
                    new HaplotypeDataHolder[] {TestSupport.simpleHap()}, out);
            assertEquals(TestSupport.SIMPLE_EXPECTED, out[0], 1e-5);
            hmm.done();

            System.clearProperty("warpdp.token.file");
            WarpdpPairHmm noToken = new WarpdpPairHmm();
            assertFalse("load() checks ServerInfo, which needs the token", noToken.load(null));
        } finally {
            for (int i = 0; i < keys.length; i++) {
                if (saved[i] == null) {
                    System.clearProperty(keys[i]);
                } else {
                    System.setProperty(keys[i], saved[i]);
                }
            }
        }
    }

    @Test
    public void plaintextClientCannotTalkToTlsServer() {
        try (WarpdpClient plain = WarpdpClient.connect(ClientOptions.of(address).withToken(TOKEN).withRetries(0))) {
            assertFalse(plain.isServing());
        }
    }
}
