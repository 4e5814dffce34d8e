package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.Test;
import org.warpdp.client.AlignParams;
import org.warpdp.client.AlignResults;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.EditParams;
import org.warpdp.client.EditResults;
import org.warpdp.client.QueryTargetPairs;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.WarpdpException;

/**
 * The client's align and edit methods against the test server: parasail's scores and edlib's distances and
 * locations (../shared/data/align, edit), Scrooge's windowed CIGARs, and the Python CLI's output lines
 * (CIGARs included: several can be optimal, and warpdp's rule picks one) on the same pairs.
 */
public class AlignEditTest {
    private static final int PAIRS = 24; // the first pairs of each set: short ones

    /** The first {@code n} lines of {@code file}, and a TSV of them for the Python CLI. */
    private static List<String> head(Path file, int n) throws IOException {
        return Files.readAllLines(file, StandardCharsets.US_ASCII).subList(0, n);
    }

    private static QueryTargetPairs pairs(List<String> tsv) {
        QueryTargetPairs.Builder b = QueryTargetPairs.builder();
        for (String line : tsv) {
            String[] f = line.split("\t");
            b.add(TestSupport.ascii(f[0]), TestSupport.ascii(f[1]));
        }
        return b.build();
    }

    private static Path tsv(List<String> lines) throws IOException {
        Path file = Files.createTempFile("warpdp-pairs", ".tsv");
        file.toFile().deleteOnExit();
        Files.write(file, lines, StandardCharsets.US_ASCII);
        return file;
    }

    /** The Python CLI's lines without its header. */
    private static List<String> python(String... args) throws Exception {
        List<String> out = XdropSeedExtTest.python(args);
        return out.subList(1, out.size());
    }

    private static List<String> tabbed(AlignResults r) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.nPairs(); i++) {
            out.add(r.line(i).replace(' ', '\t'));
        }
        return out;
    }

    private static List<String> tabbed(EditResults r) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.nPairs(); i++) {
            StringBuilder s = new StringBuilder(r.distance()[i] + "\t" + r.targetBegin()[i] + "\t" + r.targetEnd()[i]);
            if (r.cigars() != null) {
                s.append('\t').append(r.cigarString(i));
            }
            if (r.locationBegins() != null) {
                List<String> locations = new ArrayList<>();
                for (int j = 0; j < r.locationBegins()[i].length; j++) {
                    locations.add(r.locationBegins()[i][j] + "-" + r.locationEnds()[i][j]);
                }
                s.append('\t').append(String.join(",", locations));
            }
            out.add(s.toString());
        }
        return out;
    }

    @Test
    public void alignEqualsParasailScoresAndPython() throws Exception {
        Path dir = TestSupport.sharedDir("align");
        List<String> lines = head(dir.resolve("pairs-400.tsv"), PAIRS);
        QueryTargetPairs pairs = pairs(lines);
        Path file = tsv(lines);
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            for (String mode : List.of("global", "semiglobal", "local")) {
                for (String gaps : List.of("affine", "linear")) {
                    AlignParams params = AlignParams.of(AlignParams.Mode.valueOf(mode.toUpperCase()))
                            .withCigar(true);
                    // parasail's reference settings: match 2, mismatch -3; affine 5/2, linear 4 per base.
                    params = gaps.equals("affine") ? params.withGaps(5, 2) : params.withLinearGaps(4);
                    AlignResults r = client.align(pairs, params);
                    List<String> parasail = head(dir.resolve("pairs-400." + mode + "." + gaps + ".parasail.out"), PAIRS);
                    for (int i = 0; i < PAIRS; i++) {
                        String[] p = parasail.get(i).split("\t");
                        assertEquals(mode + " " + gaps + " pair " + i + " score (parasail)", Long.parseLong(p[0]),
                                r.score()[i]);
                        assertEquals(mode + " " + gaps + " pair " + i + " query end (parasail)",
                                Long.parseLong(p[2]) + 1, r.queryEnd()[i]);
                    }
                    String[] cli = gaps.equals("affine")
                            ? new String[] {"align", file.toString(), "--mode", mode, "--cigar"}
                            : new String[] {"align", file.toString(), "--mode", mode, "--cigar", "--gaps", "linear",
                                "--gap-extend", "4"};
                    assertEquals(mode + " " + gaps + " (Python)", python(cli), tabbed(r));
                }
            }
            // Score only, another scoring and the extension mode's z-drop: as Python.
            AlignParams scoreOnly = AlignParams.of(AlignParams.Mode.EXTENSION).withScores(1, -4).withGaps(6, 1)
                    .withGapConvention(AlignParams.GapConvention.L).withZdrop(20);
            AlignResults r = client.align(pairs, scoreOnly);
            assertTrue(!r.hasCigars());
            assertEquals(python("align", file.toString(), "--mode", "extension", "--match", "1", "--mismatch", "-4",
                    "--gap-open", "6", "--gap-extend", "1", "--gap-convention", "L", "--zdrop", "20"), tabbed(r));
        }
    }

    @Test
    public void editEqualsEdlibScroogeAndPython() throws Exception {
        Path dir = TestSupport.sharedDir("edit");
        List<String> lines = head(dir.resolve("pairs-400.tsv"), PAIRS);
        QueryTargetPairs pairs = pairs(lines);
        Path file = tsv(lines);
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            for (EditParams.Mode mode : EditParams.Mode.values()) {
                EditResults r = client.edit(pairs, EditParams.of(mode).withTask(EditParams.Task.PATH));
                List<String> edlib = head(dir.resolve("pairs-400." + mode.wireName() + ".edlib.out"), PAIRS);
                for (int i = 0; i < PAIRS; i++) {
                    // distance t_start t_end(inclusive) cigar locations(start-end inclusive)
                    String[] e = edlib.get(i).split("\t");
                    String what = mode + " pair " + i + " (edlib)";
                    assertEquals(what, Long.parseLong(e[0]), r.distance()[i]);
                    assertEquals(what, Long.parseLong(e[1]), r.targetBegin()[i]);
                    assertEquals(what, Long.parseLong(e[2]) + 1, r.targetEnd()[i]);
                    String[] locations = e[4].split(",");
                    assertEquals(what, locations.length, r.locationBegins()[i].length);
                    for (int j = 0; j < locations.length; j++) {
                        String[] be = locations[j].split("-");
                        assertEquals(what, Long.parseLong(be[0]), r.locationBegins()[i][j]);
                        assertEquals(what, Long.parseLong(be[1]) + 1, r.locationEnds()[i][j]);
                    }
                }
                assertEquals(mode + " (Python)", python("edit", file.toString(), "--mode", mode.wireName(), "--task",
                        "path"), tabbed(r));
            }
            EditResults bounded = client.edit(pairs, EditParams.of(EditParams.Mode.HW).withK(5));
            assertEquals(python("edit", file.toString(), "--mode", "hw", "-k", "5"), tabbed(bounded));
            assertTrue("some pairs above k = 5", java.util.Arrays.stream(bounded.distance()).anyMatch(d -> d == -1));

            List<String> scrooge = head(dir.resolve("pairs-400.scrooge-w32o17.out"), PAIRS);
            EditResults windowed = client.edit(pairs, EditParams.windowed(32, 17).withTask(EditParams.Task.PATH));
            for (int i = 0; i < PAIRS; i++) {
                String[] s = scrooge.get(i).split("\t");
                assertEquals("windowed pair " + i + " distance (Scrooge)", Long.parseLong(s[0]), windowed.distance()[i]);
                assertEquals("windowed pair " + i + " CIGAR (Scrooge)", s[1], windowed.cigarString(i));
            }
        }
    }

    @Test
    public void largeJobsAreStreamedInChunks() throws Exception {
        QueryTargetPairs alignPairs = pairs(head(TestSupport.sharedDir("align").resolve("pairs-400.tsv"), 60));
        QueryTargetPairs editPairs = pairs(head(TestSupport.sharedDir("edit").resolve("pairs-400.tsv"), 60));
        AlignParams local = AlignParams.of(AlignParams.Mode.LOCAL).withCigar(true);
        EditParams path = EditParams.of(EditParams.Mode.HW).withTask(EditParams.Task.PATH);
        List<String> alignWhole;
        List<String> editWhole;
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            alignWhole = tabbed(client.align(alignPairs, local));
            editWhole = tabbed(client.edit(editPairs, path));
            assertEquals(2, client.requestsSent());
        }
        try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(TestSupport.address())
                .withMaxCellsPerRequest(40_000))) {
            assertEquals(alignWhole, tabbed(client.align(alignPairs, local)));
            long afterAlign = client.requestsSent();
            assertTrue("align requests: " + afterAlign, afterAlign >= 10);
            assertEquals(editWhole, tabbed(client.edit(editPairs, path)));
            assertTrue("edit requests: " + (client.requestsSent() - afterAlign), client.requestsSent() - afterAlign >= 10);
            assertEquals(alignWhole.subList(5, 15), tabbed(client.align(alignPairs.select(5, 15), local)));
        }
    }

    @Test
    public void emptyJobsMakeNoCall() {
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertEquals(0, client.align(QueryTargetPairs.builder().build()).nPairs());
            assertEquals(0, client.edit(QueryTargetPairs.builder().build()).nPairs());
            assertEquals(0, client.requestsSent());
        }
    }

    @Test
    public void badInputIsRefused() {
        byte[] seq = TestSupport.ascii("ACGTACGTAC");
        // Locally: the packed layout, empty sequences, parameters out of range or with the wrong sign.
        assertThrows(IllegalArgumentException.class, () -> new QueryTargetPairs(seq, new long[] {0, 5}, seq,
                new long[] {0, 10}));
        assertThrows(IllegalArgumentException.class, () -> QueryTargetPairs.builder().add(seq, new byte[0]).build());
        assertThrows(IllegalArgumentException.class, () -> QueryTargetPairs.builder().add(new byte[0], seq).build());
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withScores(0, -3));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withScores(2, 3));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withGaps(-5, 2));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withGaps(1, 2)); // open < extend, L-1
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withScores(70000, -3));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withZdrop(10)); // not extension
        assertThrows(IllegalArgumentException.class, () -> AlignParams.of(AlignParams.Mode.EXTENSION).withZdrop(-1));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.DEFAULT.withMatrix(new int[24]));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.gatk(200, 150, -260, -11,
                AlignParams.Overhang.SOFTCLIP));
        assertThrows(IllegalArgumentException.class, () -> AlignParams.gatk(200, -150, -260, -11, null));
        assertThrows(IllegalArgumentException.class, () -> EditParams.DEFAULT.withK(-2));
        assertThrows(IllegalArgumentException.class, () -> new EditParams(EditParams.Mode.NW, -1,
                EditParams.Task.DISTANCE, EditParams.Method.WINDOWED, 64, 33));
        assertThrows(IllegalArgumentException.class, () -> EditParams.windowed(65, 33));
        assertThrows(IllegalArgumentException.class, () -> EditParams.windowed(32, 32));
        assertThrows(IllegalArgumentException.class, () -> EditParams.windowed(32, -1));
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            // Too long for int32 scores with these parameters: refused before sending.
            QueryTargetPairs longPair = QueryTargetPairs.builder().add(new byte[5000], new byte[5000]).build();
            IllegalArgumentException local = assertThrows(IllegalArgumentException.class,
                    () -> client.align(longPair, AlignParams.DEFAULT.withScores(60000, -3)));
            assertTrue(local.getMessage(), local.getMessage().contains("pair 0"));
            // On the server: INVALID_ARGUMENT naming the pair (the windowed method takes A, C, G, T only).
            QueryTargetPairs withN = QueryTargetPairs.builder().add(seq, seq).add(TestSupport.ascii("ACGTNACGT"), seq)
                    .build();
            WarpdpException e = assertThrows(WarpdpException.class, () -> client.edit(withN, EditParams.windowed(32, 17)));
            assertEquals("INVALID_ARGUMENT", e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("pair 1"));
        }
    }
}
