package org.warpdp.test;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.WarpdpClient;

/** The test server, settings passed by the pom (Surefire), reference data readers and shared assertions. */
final class TestSupport {
    static final double TOLERANCE = 1e-4;
    private static String address;

    private TestSupport() {
    }

    /**
     * The test server's address: -Dwarpdp.address when given, else a CPU server of this checkout
     * ({@code warpdp.test.serve} in {@code warpdp.test.repo}) started once for the test JVM and stopped when
     * it exits. The address also becomes -Dwarpdp.address, which GATK's drop-in classes read.
     */
    static synchronized String address() {
        if (address == null) {
            String given = System.getProperty("warpdp.address");
            address = given != null && !given.isBlank() ? given : startServer();
            System.setProperty("warpdp.address", address);
        }
        return address;
    }

    private static String startServer() {
        String serve = System.getProperty("warpdp.test.serve");
        String repo = System.getProperty("warpdp.test.repo");
        assertTrue("no -Dwarpdp.address and no -Dwarpdp.test.serve / -Dwarpdp.test.repo to start a server with"
                + " (the pom sets them)", serve != null && repo != null);
        try {
            int port = freePort();
            File log = new File(System.getProperty("warpdp.test.log", "test-server.log"));
            Process server = new ProcessBuilder("bash", "-c", "exec " + serve + " \"$@\"", "serve", "--host",
                    "127.0.0.1", "--port", Integer.toString(port), "--backend", "cpu")
                    .directory(new File(repo)).redirectErrorStream(true).redirectOutput(log).start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                server.destroy();
                try {
                    server.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                server.destroyForcibly();
            }));
            String a = "127.0.0.1:" + port;
            try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(a).withRetries(0))) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (!client.isServing()) {
                    assertTrue("the test server (" + serve + ") exited; see " + log, server.isAlive());
                    assertTrue("the test server did not become healthy in 120 s; see " + log,
                            System.nanoTime() < deadline);
                    Thread.sleep(200);
                }
            }
            return a;
        } catch (IOException | InterruptedException e) {
            throw new AssertionError("cannot start the test server: " + e, e);
        }
    }

    static Path dataDir() {
        String dir = System.getProperty("warpdp.test.data", "../shared/data/pairhmm");
        Path path = Path.of(dir);
        assumeTrue("reference data not found at " + path.toAbsolutePath().normalize()
                + " (../shared/data/pairhmm from the repository root); skipping", Files.isDirectory(path));
        return path;
    }

    /** A folder of the shared reference data beside {@link #dataDir()} ("xdrop", "seedext"); skips when absent. */
    static Path sharedDir(String name) {
        Path pairhmm = Path.of(System.getProperty("warpdp.test.data", "../shared/data/pairhmm"));
        Path path = pairhmm.toAbsolutePath().normalize().getParent().resolve(name);
        assumeTrue("reference data not found at " + path + "; skipping", Files.isDirectory(path));
        return path;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** One row of GKL's pairhmm-testdata: one read, one haplotype, the expected log10 likelihood. */
    record GklRow(int line, ReadDataHolder read, HaplotypeDataHolder hap, double expected) {
    }

    /** GKL's unit-test data, prepared as GKL's test does: qualities minus 33, read qualities at least 6. */
    static List<GklRow> gklRows() throws IOException {
        Path file = dataDir().resolve("gkl-pairhmm-testdata.txt");
        assumeTrue("missing " + file, Files.isRegularFile(file));
        List<GklRow> rows = new ArrayList<>();
        List<String> lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 7) {
                fail(file + ":" + (i + 1) + ": expected 7 columns, found " + f.length);
            }
            HaplotypeDataHolder hap = new HaplotypeDataHolder();
            hap.haplotypeBases = ascii(f[0]);
            ReadDataHolder read = new ReadDataHolder();
            read.readBases = ascii(f[1]);
            read.readQuals = phred(f[2], 6);
            read.insertionGOP = phred(f[3], 0);
            read.deletionGOP = phred(f[4], 0);
            read.overallGCP = phred(f[5], 0);
            rows.add(new GklRow(i + 1, read, hap, Double.parseDouble(f[6])));
        }
        assertTrue("no rows in " + file, !rows.isEmpty());
        return rows;
    }

    /** One record of the PairHMM text format: R reads against H haplotypes, and GKL's results (read-major). */
    record Record(int line, ReadDataHolder[] reads, HaplotypeDataHolder[] haps, double[] expected) {
    }

    /** Records of {@code name}.in with expected values from {@code name}.gkl.out (base qualities at least 6). */
    static List<Record> records(String name) throws IOException {
        Path in = dataDir().resolve(name + ".in");
        Path out = dataDir().resolve(name + ".gkl.out");
        assumeTrue("missing " + in + " or " + out, Files.isRegularFile(in) && Files.isRegularFile(out));
        List<String> lines = Files.readAllLines(in, StandardCharsets.US_ASCII);
        double[] expected = Files.readAllLines(out, StandardCharsets.US_ASCII).stream().map(String::strip)
                .filter(s -> !s.isEmpty()).mapToDouble(Double::parseDouble).toArray();
        List<Record> records = new ArrayList<>();
        int next = 0;
        int i = 0;
        while (i < lines.size()) {
            String header = lines.get(i).strip();
            if (header.isEmpty()) {
                i++;
                continue;
            }
            int start = i + 1;
            String[] rh = header.split("\\s+");
            int nReads = Integer.parseInt(rh[0]);
            int nHaps = Integer.parseInt(rh[1]);
            ReadDataHolder[] reads = new ReadDataHolder[nReads];
            for (int r = 0; r < nReads; r++) {
                String[] f = lines.get(++i).strip().split("\\s+");
                reads[r] = new ReadDataHolder();
                reads[r].readBases = ascii(f[0]);
                reads[r].readQuals = phred(f[1], 6);
                reads[r].insertionGOP = phred(f[2], 0);
                reads[r].deletionGOP = phred(f[3], 0);
                reads[r].overallGCP = phred(f[4], 0);
            }
            HaplotypeDataHolder[] haps = new HaplotypeDataHolder[nHaps];
            for (int h = 0; h < nHaps; h++) {
                haps[h] = new HaplotypeDataHolder();
                haps[h].haplotypeBases = ascii(lines.get(++i).strip());
            }
            i++;
            int n = nReads * nHaps;
            if (next + n > expected.length) {
                fail(out + " has fewer values than " + in + " has pairs");
            }
            records.add(new Record(start, reads, haps, Arrays.copyOfRange(expected, next, next + n)));
            next += n;
        }
        if (next != expected.length) {
            fail(out + " has " + expected.length + " values but " + in + " has " + next + " pairs");
        }
        return records;
    }

    /** GKL's simpleTest read: "ACGT" with every quality '+' taken as the raw value 43. */
    static ReadDataHolder simpleRead() {
        ReadDataHolder read = new ReadDataHolder();
        read.readBases = ascii("ACGT");
        read.readQuals = ascii("++++");
        read.insertionGOP = ascii("++++");
        read.deletionGOP = ascii("++++");
        read.overallGCP = ascii("++++");
        return read;
    }

    static HaplotypeDataHolder simpleHap() {
        HaplotypeDataHolder hap = new HaplotypeDataHolder();
        hap.haplotypeBases = ascii("ACGT");
        return hap;
    }

    /** GKL's expected value for {@link #simpleRead()} against {@link #simpleHap()}. */
    static final double SIMPLE_EXPECTED = -6.022797e-01;

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** phred+33 text to raw phred, raised to at least {@code min}. */
    static byte[] phred(String s, int min) {
        byte[] q = ascii(s);
        for (int i = 0; i < q.length; i++) {
            q[i] = (byte) Math.max(q[i] - 33, min);
        }
        return q;
    }

    /** Fails listing every value off by more than the tolerance. */
    static void assertClose(String what, double[] expected, double[] actual, double tolerance) {
        if (expected.length != actual.length) {
            fail(what + ": " + actual.length + " values, expected " + expected.length);
        }
        StringBuilder bad = new StringBuilder();
        int count = 0;
        for (int i = 0; i < expected.length; i++) {
            if (!(Math.abs(expected[i] - actual[i]) <= tolerance)) {
                if (++count <= 10) {
                    bad.append(String.format("%n  [%d] expected %.6e, got %.6e", i, expected[i], actual[i]));
                }
            }
        }
        if (count > 0) {
            fail(what + ": " + count + " of " + expected.length + " values differ by more than " + tolerance + bad);
        }
    }

    /** All reads and haplotypes of a data set as one region (one GATK call): many reads, several haplotypes. */
    static Record bigRegion(List<Record> records, int maxReads, int maxHaps) {
        List<ReadDataHolder> reads = new ArrayList<>();
        List<HaplotypeDataHolder> haps = new ArrayList<>();
        for (Record r : records) {
            for (ReadDataHolder read : r.reads()) {
                if (reads.size() < maxReads) {
                    reads.add(read);
                }
            }
            for (HaplotypeDataHolder hap : r.haps()) {
                if (haps.size() < maxHaps) {
                    haps.add(hap);
                }
            }
        }
        return new Record(0, reads.toArray(new ReadDataHolder[0]), haps.toArray(new HaplotypeDataHolder[0]),
                new double[0]);
    }
}
