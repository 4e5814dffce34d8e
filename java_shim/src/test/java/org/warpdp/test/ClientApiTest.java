package org.warpdp.test;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.List;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.junit.Test;
import org.warpdp.client.ClientOptions;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.ServerInfo;
import org.warpdp.client.WarpdpClient;

/** The client API for other JVM tools: server info, health, Pair-HMM on packed batches. */
public class ClientApiTest {

    /** Every record of the data set as one batch each, in one packed job. */
    static PairHmmBatches packed(List<TestSupport.Record> records) {
        PairHmmBatches.Builder b = PairHmmBatches.builder();
        for (TestSupport.Record rec : records) {
            for (HaplotypeDataHolder h : rec.haps()) {
                b.addHaplotype(h.haplotypeBases);
            }
            for (ReadDataHolder r : rec.reads()) {
                b.addRead(r.readBases, r.readQuals, r.insertionGOP, r.deletionGOP, r.overallGCP);
            }
            b.endBatch();
        }
        return b.build();
    }

    static double[] expected(List<TestSupport.Record> records) {
        return records.stream().flatMapToDouble(r -> Arrays.stream(r.expected())).toArray();
    }

    @Test
    public void serverInfoAndHealth() {
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertEquals("SERVING", client.health());
            assertTrue(client.isServing());
            ServerInfo info = client.serverInfo();
            assertFalse(info.version().isEmpty());
            assertEquals("cpu", info.backend());
            assertEquals("cpu", info.requestedBackend());
            assertTrue(info.algorithms().stream().anyMatch(a -> a.name().equals("pairhmm") && a.rpc().equals("PairHmm")));
            assertFalse(info.devices().isEmpty());
            assertTrue(info.maxRequestCells() > 0);
            assertTrue(info.maxMessageBytes() > 0);
            assertFalse(info.tokenRequired());
            assertTrue(info.summary(), info.summary().contains(info.version()));
        }
    }

    @Test
    public void pairHmmOnPackedBatches() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        PairHmmBatches job = packed(records);
        assertEquals(records.size(), job.nBatches());
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            double[] result = client.pairHmm(job, false);
            TestSupport.assertClose("10s as one packed job", expected(records), result, TestSupport.TOLERANCE);

            // Into a larger array at an offset; the rest untouched.
            double[] out = new double[result.length + 3];
            Arrays.fill(out, 7.0);
            client.pairHmm(job, false, out, 2);
            assertArrayEquals(result, Arrays.copyOfRange(out, 2, 2 + result.length), 0.0);
            assertEquals(7.0, out[0], 0.0);
            assertEquals(7.0, out[out.length - 1], 0.0);
            assertThrows(IllegalArgumentException.class, () -> client.pairHmm(job, false, new double[3], 0));

            // Nothing to score: no call.
            long before = client.requestsSent();
            assertEquals(0, client.pairHmm(PairHmmBatches.builder().build(), false).length);
            assertEquals(before, client.requestsSent());
        }
    }

    @Test
    public void largeJobsAreStreamedInChunks() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        PairHmmBatches job = packed(records);
        try (WarpdpClient client = WarpdpClient.connect(
                ClientOptions.of(TestSupport.address()).withMaxCellsPerRequest(job.cells() / 20))) {
            double[] result = client.pairHmm(job, false);
            assertTrue("chunks: " + client.requestsSent(), client.requestsSent() >= 20);
            TestSupport.assertClose("10s streamed in chunks", expected(records), result, TestSupport.TOLERANCE);
        }
    }

    @Test
    public void roundRobinOverAListSkipsADeadServer() throws Exception {
        List<TestSupport.Record> records = TestSupport.records("10s");
        PairHmmBatches job = packed(records);
        String list = "127.0.0.1:" + TestSupport.freePort() + "," + TestSupport.address();
        try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of(list).withMaxCellsPerRequest(job.cells() / 8))) {
            assertEquals("SERVING", client.health());
            TestSupport.assertClose("10s over a server list", expected(records), client.pairHmm(job, false),
                    TestSupport.TOLERANCE);
        }
    }

    @Test
    public void optionsFromPropertiesAndMaskedToken() {
        ClientOptions o = ClientOptions.fromEnvironment();
        assertEquals(List.of(TestSupport.address()), o.addresses());
        ClientOptions withToken = o.withToken("s3cret");
        assertFalse(withToken.toString().contains("s3cret"));
        assertThrows(IllegalArgumentException.class, () -> o.withToken("has space"));
    }
}
