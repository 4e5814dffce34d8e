package org.warpdp.test;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.SeedExtPairs;
import org.warpdp.client.SeedExtParams;
import org.warpdp.client.SeedExtResults;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.WarpdpException;
import org.warpdp.client.XdropPairs;
import org.warpdp.client.XdropParams;
import org.warpdp.client.XdropResults;

/**
 * The client's X-drop and seed-extension methods against the test server: the shared reference outputs
 * (SeqAn 2's extendSeed, BWA's ksw_extend2), the Python CLI for other modes and scores, splitting, errors.
 */
public class XdropSeedExtTest {
    private static final int K = 17;
    private static final SeedExtParams ALT = new SeedExtParams(2, 5, 5, 2, 7, 1, 30, 0, 50);

    /** LOGAN's text format: {@code seqV posV seqH posH strand}; strand c complements seqH and moves posH as
     * LOGAN's demo does (posH = len(seqH) - posH - k). */
    static XdropPairs readLogan(Path file, int k) throws IOException {
        XdropPairs.Builder b = XdropPairs.builder();
        for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
            String[] f = line.strip().split("\\s+");
            if (f.length < 5) {
                continue;
            }
            byte[] h = TestSupport.ascii(f[2]);
            long posH = Long.parseLong(f[3]);
            if (f[4].equals("c")) {
                for (int i = 0; i < h.length; i++) {
                    h[i] = complement(h[i]);
                }
                posH = h.length - posH - k;
            }
            b.add(h, posH, TestSupport.ascii(f[0]), Long.parseLong(f[1]));
        }
        return b.build();
    }

    private static byte complement(byte base) {
        return switch (base) {
            case 'A' -> 'T';
            case 'C' -> 'G';
            case 'G' -> 'C';
            case 'T' -> 'A';
            case 'a' -> 't';
            case 'c' -> 'g';
            case 'g' -> 'c';
            case 't' -> 'a';
            default -> base;
        };
    }

    /** {@code query target h0} lines. */
    static SeedExtPairs readSeedTsv(Path file) throws IOException {
        SeedExtPairs.Builder b = SeedExtPairs.builder();
        for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t", -1);
            b.add(TestSupport.ascii(f[0]), TestSupport.ascii(f[1]), Integer.parseInt(f[2].strip()));
        }
        return b.build();
    }

    static List<String> lines(Path file) throws IOException {
        return Files.readAllLines(file, StandardCharsets.US_ASCII).stream().map(String::strip)
                .filter(s -> !s.isEmpty()).toList();
    }

    static List<String> lines(XdropResults r) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.nPairs(); i++) {
            out.add(r.line(i));
        }
        return out;
    }

    static List<String> lines(SeedExtResults r) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.nPairs(); i++) {
            out.add(r.line(i));
        }
        return out;
    }

    /** Output lines of {@code warpdp ARGS --backend cpu} run in the repository (the Python side, in-process). */
    static List<String> python(String... args) throws Exception {
        String serve = System.getProperty("warpdp.test.serve");
        String repo = System.getProperty("warpdp.test.repo");
        assumeTrue("-Dwarpdp.test.serve and -Dwarpdp.test.repo not set (the pom sets them)",
                serve != null && repo != null && serve.strip().endsWith(" serve"));
        String warpdp = serve.strip().substring(0, serve.strip().length() - " serve".length());
        Path out = Files.createTempFile("warpdp-test", ".out");
        try {
            List<String> command = new ArrayList<>(List.of("bash", "-c", "exec " + warpdp + " \"$@\"", "warpdp"));
            command.addAll(List.of(args));
            command.addAll(List.of("--backend", "cpu", "-o", out.toString()));
            Process p = new ProcessBuilder(command).directory(new File(repo)).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue("warpdp " + String.join(" ", args) + " failed:\n" + log,
                    p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0);
            return lines(out);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    @Test
    public void xdropReproducesSeqAn() throws Exception {
        Path dir = TestSupport.sharedDir("xdrop");
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            for (String name : List.of("logan-example", "synthetic-300")) {
                XdropPairs pairs = readLogan(dir.resolve(name + ".tsv"), K);
                for (int x : name.equals("logan-example") ? new int[] {5, 21, 100} : new int[] {10, 50, 200}) {
                    XdropResults r = client.xdrop(pairs, XdropParams.of(K, x));
                    assertEquals(name + " x" + x, lines(dir.resolve(name + ".x" + x + ".seqan.out")), lines(r));
                    for (int i = 0; i < r.nPairs(); i++) {
                        assertTrue("cells of pair " + i, r.cells()[i] > 0 || r.score()[i] == K);
                    }
                }
            }
        }
    }

    @Test
    public void xdropBestModeAndOtherScoresMatchPython() throws Exception {
        Path tsv = TestSupport.sharedDir("xdrop").resolve("synthetic-300.tsv");
        XdropParams params = XdropParams.of(K, 40).withScores(2, -3, -4).withReport(XdropParams.Report.BEST);
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            List<String> got = lines(client.xdrop(readLogan(tsv, K), params));
            assertEquals(python("xdrop", tsv.toString(), "-k", "17", "-x", "40", "--match", "2", "--mismatch", "-3",
                    "--gap", "-4", "--report", "best"), got);
        }
    }

    @Test
    public void seedExtendReproducesBwa() throws Exception {
        Path dir = TestSupport.sharedDir("seedext");
        SeedExtPairs pairs = readSeedTsv(dir.resolve("bwamem-like-500.tsv"));
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertEquals(lines(dir.resolve("bwamem-like-500.ksw_extend2.out")), lines(client.seedExtend(pairs)));
            assertEquals(lines(dir.resolve("bwamem-like-500.alt.ksw_extend2.out")),
                    lines(client.seedExtend(pairs, ALT)));
        }
    }

    @Test
    public void largeJobsAreStreamedInChunks() throws Exception {
        XdropPairs xPairs = readLogan(TestSupport.sharedDir("xdrop").resolve("synthetic-300.tsv"), K);
        SeedExtPairs sPairs = readSeedTsv(TestSupport.sharedDir("seedext").resolve("bwamem-like-500.tsv"));
        XdropParams params = XdropParams.of(K, 50);
        long xCells = 0;
        for (int i = 0; i < xPairs.nPairs(); i++) {
            xCells += params.cells(xPairs, i);
        }
        List<String> xWhole;
        List<String> sWhole;
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            xWhole = lines(client.xdrop(xPairs, params));
            sWhole = lines(client.seedExtend(sPairs, ALT));
            assertEquals(2, client.requestsSent());
        }
        try (WarpdpClient client = WarpdpClient.connect(
                ClientOptions.of(TestSupport.address()).withMaxCellsPerRequest(xCells / 20))) {
            assertEquals(xWhole, lines(client.xdrop(xPairs, params)));
            assertTrue("X-drop requests: " + client.requestsSent(), client.requestsSent() >= 20);
        }
        try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(TestSupport.address())
                .withMaxCellsPerRequest(20_000))) {
            assertEquals(sWhole, lines(client.seedExtend(sPairs, ALT)));
            assertTrue("seed-extension requests: " + client.requestsSent(), client.requestsSent() >= 20);
            // A selection is its own packed set: the same results as the slice of the whole.
            assertEquals(sWhole.subList(10, 30), lines(client.seedExtend(sPairs.select(10, 30), ALT)));
        }
    }

    @Test
    public void emptyJobsMakeNoCall() {
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertEquals(0, client.xdrop(XdropPairs.builder().build(), XdropParams.of(K, 10)).nPairs());
            assertEquals(0, client.seedExtend(SeedExtPairs.builder().build()).nPairs());
            assertEquals(0, client.requestsSent());
        }
    }

    @Test
    public void badInputIsRefused() {
        byte[] seq = TestSupport.ascii("ACGTACGTACGTACGTACGTACGT");
        // Locally: inconsistent arrays, seeds outside their sequences, parameters out of range.
        assertThrows(IllegalArgumentException.class, () -> new XdropPairs(seq, new long[] {0, 5}, seq,
                new long[] {0, 24}, new long[] {0}, new long[] {0}));
        assertThrows(IllegalArgumentException.class, () -> new SeedExtPairs(seq, new long[] {0, 24}, seq,
                new long[] {0, 24}, new int[] {-1}));
        assertThrows(IllegalArgumentException.class, () -> XdropParams.of(0, 10));
        assertThrows(IllegalArgumentException.class, () -> XdropParams.of(K, 10).withScores(1, 1, -1));
        assertThrows(IllegalArgumentException.class, () -> new SeedExtParams(1, 4, 6, 0, 6, 1, 100, 5, 100));
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            XdropPairs outside = XdropPairs.builder().add(seq, 10, seq, 0).build();
            IllegalArgumentException local = assertThrows(IllegalArgumentException.class,
                    () -> client.xdrop(outside, XdropParams.of(K, 10)));
            assertTrue(local.getMessage(), local.getMessage().contains("pair 0"));

            // On the server: INVALID_ARGUMENT naming the field.
            byte[] bad = TestSupport.ascii("ACGTACGTACGTACGTACGTACXT");
            XdropPairs badBase = XdropPairs.builder().add(seq, 0, seq, 0).add(bad, 0, seq, 0).build();
            WarpdpException e = assertThrows(WarpdpException.class, () -> client.xdrop(badBase, XdropParams.of(K, 10)));
            assertEquals("INVALID_ARGUMENT", e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("invalid XdropRequest.pairs: h_bases: pair 1 has 'X'"));

            SeedExtPairs tooHigh = SeedExtPairs.builder().add(seq, seq, SeedExtPairs.MAX_SCORE).build();
            e = assertThrows(WarpdpException.class, () -> client.seedExtend(tooHigh));
            assertEquals("INVALID_ARGUMENT", e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("invalid SeedExtendRequest.pairs: pair 0: h0 + a"));
        }
    }

    @Test
    public void serverListsEveryAlgorithm() {
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            List<String> rpcs = client.serverInfo().algorithms().stream().map(a -> a.name() + "/" + a.rpc()).toList();
            // The first three families, then any registered after them (align, edit, ...).
            assertEquals(List.of("pairhmm/PairHmm", "xdrop/Xdrop", "seedext/SeedExtend"), rpcs.subList(0, 3));
            assertTrue(rpcs.toString(), rpcs.containsAll(List.of("align/Align", "edit/Edit")));
        }
    }

    @Test
    public void xdropResultsArePerPairColumns() throws Exception {
        // A pair whose flanks are identical extends to both ends: score = whole length (match 1).
        byte[] seq = TestSupport.ascii("ACGTTGCAACGTTGCAACGTTGCAACGTTGCA");
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            XdropResults r = client.xdrop(XdropPairs.builder().add(seq, 5, seq, 5).build(), XdropParams.of(K, 5));
            assertArrayEquals(new long[] {seq.length}, r.score());
            assertArrayEquals(new long[] {0}, r.beginH());
            assertArrayEquals(new long[] {seq.length}, r.endV());
        }
    }
}
