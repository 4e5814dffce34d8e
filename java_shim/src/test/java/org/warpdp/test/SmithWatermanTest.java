package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.broadinstitute.gatk.nativebindings.smithwaterman.SWAlignerNativeBinding;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;
import org.junit.Test;
import org.warpdp.gatk.GklFallback;
import org.warpdp.gatk.WarpdpSmithWaterman;

import com.intel.gkl.smithwaterman.IntelSmithWaterman;

/**
 * GATK's Smith-Waterman binding: {@code com.intel.gkl.smithwaterman.IntelSmithWaterman} on the test server
 * ({@code warpdp.smithwaterman=server}) gives Intel GKL's native output (../shared/data/sw, made with GKL's
 * AVX2 kernel) on every case; by default, or with the server down, it runs GKL's own class (GKL's jar is behind ours on the test class path, as in GATK), which
 * is then compared with the server on random pairs; bad input is refused the same way on both paths.
 */
public class SmithWatermanTest {
    // GATK's HaplotypeCaller parameter sets (SmithWatermanAlignmentConstants).
    private static final SWParameters NEW_SW_PARAMETERS = new SWParameters(200, -150, -260, -11);
    private static final SWParameters ALIGNMENT_TO_BEST_HAPLOTYPE = new SWParameters(10, -15, -30, -5);
    private static final SWParameters STANDARD_NGS = new SWParameters(25, -50, -110, -6);
    /** GKL's AVX-512 kernel (what GKL picks on an AVX-512 machine) is wrong from this length on (data README). */
    private static final int GKL_AVX512_SAFE_LENGTH = 1024;

    /** One case of gatk-sw-600: ref, alt, parameters, strategy, and GKL's CIGAR and offset. */
    record SwCase(int line, byte[] ref, byte[] alt, SWParameters params, SWOverhangStrategy strategy, String cigar,
                  int offset) {
        String where() {
            return "gatk-sw-600.tsv line " + line + " (" + params.getMatchValue() + "/" + params.getMismatchPenalty()
                    + "/" + params.getGapOpenPenalty() + "/" + params.getGapExtendPenalty() + " " + strategy + ")";
        }
    }

    static List<SwCase> cases() throws IOException {
        Path dir = TestSupport.sharedDir("sw");
        Path in = dir.resolve("gatk-sw-600.tsv");
        Path out = dir.resolve("gatk-sw-600.gkl.out");
        assumeTrue("missing " + in + " or " + out, Files.isRegularFile(in) && Files.isRegularFile(out));
        List<String> inputs = Files.readAllLines(in, StandardCharsets.US_ASCII);
        List<String> expected = Files.readAllLines(out, StandardCharsets.US_ASCII);
        assertEquals(out + " and " + in + " differ in length", inputs.size(), expected.size());
        List<SwCase> cases = new ArrayList<>();
        for (int i = 0; i < inputs.size(); i++) {
            String[] f = inputs.get(i).split("\t");
            String[] e = expected.get(i).split("\t");
            assertEquals(in + ":" + (i + 1), 7, f.length);
            assertEquals(out + ":" + (i + 1), 2, e.length);
            cases.add(new SwCase(i + 1, TestSupport.ascii(f[0]), TestSupport.ascii(f[1]),
                    new SWParameters(Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                            Integer.parseInt(f[5])), SWOverhangStrategy.valueOf(f[6]), e[0], Integer.parseInt(e[1])));
        }
        return cases;
    }

    /** A binding loaded as GATK's SmithWatermanIntelAligner does, with -Dwarpdp.smithwaterman=server (or not). */
    private static IntelSmithWaterman loaded(boolean server, String address) {
        String saved = TestSupport.address(); // sets -Dwarpdp.address, which the binding reads
        System.setProperty("warpdp.address", address);
        if (server) {
            System.setProperty("warpdp.smithwaterman", "server");
        }
        try {
            IntelSmithWaterman sw = new IntelSmithWaterman();
            boolean loaded = sw.load(null);
            boolean gklNeeded = !server || !address.equals(saved); // GKL's own class, not the server's
            assumeTrue("GKL's native Smith-Waterman does not load here (no AVX2?); skipping", loaded || !gklNeeded);
            assertTrue("load() must find the test server", loaded);
            return sw;
        } finally {
            System.clearProperty("warpdp.smithwaterman");
            System.setProperty("warpdp.address", saved);
        }
    }

    /** The binding on the test server. */
    static IntelSmithWaterman onServer() {
        IntelSmithWaterman sw = loaded(true, TestSupport.address());
        assertSame("the server does the work", sw.warpdp(), sw.active());
        return sw;
    }

    /** The binding asked to use the server while it is down: GKL's own class through the fallback (or a skip
     * where GKL cannot load). */
    static IntelSmithWaterman withServerDown() throws IOException {
        return loaded(true, "127.0.0.1:" + TestSupport.freePort());
    }

    private static boolean isHaplotypeCallerSet(SWParameters p, SWParameters set) {
        return p.getMatchValue() == set.getMatchValue() && p.getMismatchPenalty() == set.getMismatchPenalty()
                && p.getGapOpenPenalty() == set.getGapOpenPenalty() && p.getGapExtendPenalty() == set.getGapExtendPenalty();
    }

    @Test
    public void everyCaseEqualsGklsNativeOutput() throws Exception {
        List<SwCase> cases = cases();
        Set<SWOverhangStrategy> strategies = EnumSet.noneOf(SWOverhangStrategy.class);
        Set<String> sets = new HashSet<>();
        long before = WarpdpSmithWaterman.alignments();
        try (IntelSmithWaterman sw = onServer()) {
            List<String> wrong = new ArrayList<>();
            for (SwCase c : cases) {
                SWNativeAlignerResult r = sw.align(c.ref(), c.alt(), c.params(), c.strategy());
                if (!r.cigar.equals(c.cigar()) || r.alignment_offset != c.offset()) {
                    wrong.add(c.where() + ": got " + r.cigar + " " + r.alignment_offset + ", GKL " + c.cigar() + " "
                            + c.offset());
                }
                strategies.add(c.strategy());
                for (SWParameters set : List.of(NEW_SW_PARAMETERS, ALIGNMENT_TO_BEST_HAPLOTYPE, STANDARD_NGS)) {
                    if (isHaplotypeCallerSet(c.params(), set)) {
                        sets.add(set.getMatchValue() + "/" + c.strategy());
                    }
                }
            }
            assertTrue(wrong.size() + " of " + cases.size() + " differ from GKL:\n  "
                    + String.join("\n  ", wrong.subList(0, Math.min(10, wrong.size()))), wrong.isEmpty());
        }
        assertEquals(cases.size(), WarpdpSmithWaterman.alignments() - before);
        // The data covers what the issue asks for: the four strategies, the three HaplotypeCaller sets.
        assertEquals(EnumSet.allOf(SWOverhangStrategy.class), strategies);
        for (int match : new int[] {200, 10, 25}) {
            assertTrue("HaplotypeCaller set with match " + match + " in the data: " + sets,
                    sets.stream().anyMatch(s -> s.startsWith(match + "/")));
        }
    }

    @Test
    public void serverDownFallsBackToGklAndAgreesWithTheServer() throws Exception {
        List<SwCase> cases = cases();
        List<LogRecord> records = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger("org.warpdp");
        log.addHandler(capture);
        IntelSmithWaterman first;
        IntelSmithWaterman second;
        boolean announcedBefore = GklFallback.announced("Smith-Waterman"); // by another test of this JVM
        try {
            first = withServerDown();
            second = withServerDown();
        } finally {
            log.removeHandler(capture);
        }
        long announcements = records.stream().filter(r -> r.getMessage().contains(
                "; using Intel GKL's own com.intel.gkl.smithwaterman.IntelSmithWaterman")).count();
        assertEquals("the switch to GKL is logged once per JVM", announcedBefore ? 0 : 1, announcements);
        assertTrue(GklFallback.announced("Smith-Waterman"));
        try (IntelSmithWaterman gkl = first; IntelSmithWaterman gkl2 = second; IntelSmithWaterman server = onServer()) {
            SWAlignerNativeBinding active = gkl.active();
            assertNotSame("not the warpdp binding", gkl.warpdp(), active);
            assertEquals("com.intel.gkl.smithwaterman.IntelSmithWaterman", active.getClass().getName());
            assertSame("GKL's class, defined by the fallback's own loader", GklFallback.loaderInUse(),
                    active.getClass().getClassLoader());
            int compared = 0;
            for (SwCase c : cases) {
                if (Math.max(c.ref().length, c.alt().length) >= GKL_AVX512_SAFE_LENGTH) {
                    continue;
                }
                SWNativeAlignerResult r = gkl.align(c.ref(), c.alt(), c.params(), c.strategy());
                assertEquals(c.where() + " CIGAR (GKL fallback)", c.cigar(), r.cigar);
                assertEquals(c.where() + " offset (GKL fallback)", c.offset(), r.alignment_offset);
                compared++;
            }
            assertTrue("cases compared: " + compared, compared >= 590);
            // Random pairs and parameters beyond the data: GKL's native code and the server agree.
            Random random = new Random(26);
            for (int i = 0; i < 400; i++) {
                byte[] ref = randomBases(random, 1 + random.nextInt(300));
                byte[] alt = random.nextBoolean() ? mutate(random, ref) : randomBases(random, 1 + random.nextInt(300));
                SWParameters p = new SWParameters(1 + random.nextInt(300), -random.nextInt(300), -random.nextInt(400),
                        -random.nextInt(40));
                SWOverhangStrategy s = SWOverhangStrategy.values()[random.nextInt(4)];
                SWNativeAlignerResult expected = gkl2.align(ref, alt, p, s);
                SWNativeAlignerResult got = server.align(ref, alt, p, s);
                String what = "random pair " + i + " (" + new String(ref, StandardCharsets.US_ASCII) + " / "
                        + new String(alt, StandardCharsets.US_ASCII) + ", " + p.getMatchValue() + "/"
                        + p.getMismatchPenalty() + "/" + p.getGapOpenPenalty() + "/" + p.getGapExtendPenalty() + " " + s
                        + ")";
                assertEquals(what + " CIGAR", expected.cigar, got.cigar);
                assertEquals(what + " offset", expected.alignment_offset, got.alignment_offset);
            }
        }
    }

    private static byte[] randomBases(Random random, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) "ACGT".charAt(random.nextInt(4));
        }
        return b;
    }

    // A copy of part of seq with substitutions and indels.
    private static byte[] mutate(Random random, byte[] seq) {
        int from = random.nextInt(seq.length);
        int to = from + 1 + random.nextInt(seq.length - from);
        StringBuilder s = new StringBuilder();
        for (int i = from; i < to; i++) {
            int roll = random.nextInt(100);
            if (roll < 4) { // substitution (or the same base)
                s.append("ACGT".charAt(random.nextInt(4)));
            } else if (roll < 6) { // deletion
                continue;
            } else if (roll < 8) { // insertion before the base
                s.append("ACGT".charAt(random.nextInt(4))).append((char) seq[i]);
            } else {
                s.append((char) seq[i]);
            }
        }
        if (s.length() == 0) {
            s.append('A');
        }
        return TestSupport.ascii(s.toString());
    }

    @Test
    public void badInputIsRefusedOnBothPaths() throws Exception {
        try (IntelSmithWaterman server = onServer(); IntelSmithWaterman gkl = withServerDown()) {
            for (IntelSmithWaterman sw : List.of(server, gkl)) {
                byte[] seq = TestSupport.ascii("ACGTACGT");
                SWParameters p = NEW_SW_PARAMETERS;
                SWOverhangStrategy s = SWOverhangStrategy.SOFTCLIP;
                List<Supplier<SWNativeAlignerResult>> bad = List.of(
                        () -> sw.align(null, seq, p, s),
                        () -> sw.align(seq, null, p, s),
                        () -> sw.align(new byte[0], seq, p, s),
                        () -> sw.align(seq, new byte[0], p, s),
                        () -> sw.align(seq, seq, null, s),
                        () -> sw.align(seq, seq, p, null),
                        () -> sw.align(new byte[WarpdpSmithWaterman.MAX_SEQUENCE_LENGTH + 1], seq, p, s),
                        () -> sw.align(seq, seq, new SWParameters(0, -150, -260, -11), s),
                        () -> sw.align(seq, seq, new SWParameters(65537, -150, -260, -11), s),
                        () -> sw.align(seq, seq, new SWParameters(200, 150, -260, -11), s),
                        () -> sw.align(seq, seq, new SWParameters(200, -150, 260, -11), s),
                        () -> sw.align(seq, seq, new SWParameters(200, -150, -260, 11), s),
                        () -> sw.align(seq, seq, new SWParameters(200, -150, -260, -65537), s),
                        // Scores that could overflow int32 on the server: (30000 + 30000 + 2) * 65536 > 2^29.
                        () -> sw.align(new byte[30000], new byte[30000], new SWParameters(65536, -1, -1, -1), s));
                for (int i = 0; i < bad.size(); i++) {
                    Supplier<SWNativeAlignerResult> call = bad.get(i);
                    IllegalArgumentException e = assertThrows("bad input " + i + " on " + sw.active(),
                            IllegalArgumentException.class, call::get);
                    assertFalse(e.getMessage().isEmpty());
                }
                // Still working after the refusals.
                assertEquals("8M", sw.align(seq, seq, p, s).cigar);
            }
        }
    }

    @Test
    public void byDefaultGklsOwnCodeRunsWithoutAskingTheServer() throws Exception {
        List<SwCase> cases = cases();
        long before = WarpdpSmithWaterman.alignments();
        try (IntelSmithWaterman sw = loaded(false, TestSupport.address())) {
            assertNotSame("not the warpdp binding", sw.warpdp(), sw.active());
            assertSame("GKL's class, defined by the fallback's own loader", GklFallback.loaderInUse(),
                    sw.active().getClass().getClassLoader());
            assertEquals("no connection to the server", null, sw.warpdp().client());
            SwCase c = cases.get(0);
            SWNativeAlignerResult r = sw.align(c.ref(), c.alt(), c.params(), c.strategy());
            assertEquals(c.where(), c.cigar(), r.cigar);
            assertEquals(c.where(), c.offset(), r.alignment_offset);
            assertThrows(IllegalArgumentException.class, () -> sw.align(c.ref(), new byte[0], c.params(), c.strategy()));
        }
        assertEquals("nothing aligned on the server", before, WarpdpSmithWaterman.alignments());
    }

    @Test
    public void withoutServerOrFallbackLoadFailsAndAlignRefuses() throws Exception {
        String saved = TestSupport.address();
        System.setProperty("warpdp.address", "127.0.0.1:" + TestSupport.freePort());
        System.setProperty("warpdp.fallback", "none");
        System.setProperty("warpdp.smithwaterman", "server");
        try {
            IntelSmithWaterman sw = new IntelSmithWaterman();
            assertFalse(sw.load(null));
            byte[] seq = TestSupport.ascii("ACGT");
            assertThrows(IllegalStateException.class,
                    () -> sw.align(seq, seq, NEW_SW_PARAMETERS, SWOverhangStrategy.SOFTCLIP));
            sw.close();
        } finally {
            System.clearProperty("warpdp.fallback");
            System.clearProperty("warpdp.smithwaterman");
            System.setProperty("warpdp.address", saved);
        }
    }
}
