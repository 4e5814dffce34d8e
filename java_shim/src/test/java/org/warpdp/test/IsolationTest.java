package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;

import org.junit.Test;
import org.warpdp.client.WarpdpClient;
import org.warpdp.client.spi.IsolatedLoader;

/**
 * The jar's gRPC, protobuf and guava stay private: the application (GATK, here the test class path) neither
 * sees them nor disturbs them. The test class path holds decoys of com.google.protobuf.ByteString and
 * com.google.common.base.Preconditions ahead of the jar, standing for GATK's own versions; every test that
 * talks to the server shows the client ignores them.
 */
public class IsolationTest {

    @Test
    public void privateLibrariesAreNotOnTheApplicationClassPath() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.grpc.ManagedChannel"));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.netty.channel.Channel"));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("org.warpdp.v1.PairHmmRequest"));
        assertNotNull("packaged privately", WarpdpClient.class.getClassLoader()
                .getResource(IsolatedLoader.PREFIX + "io/grpc/ManagedChannel.class"));
    }

    @Test
    public void decoysAreOnTheClassPathAndTheClientStillWorks() throws Exception {
        assertEquals("decoy", Class.forName("com.google.protobuf.ByteString").getField("DECOY").get(null));
        assertEquals("decoy", Class.forName("com.google.common.base.Preconditions").getField("DECOY").get(null));
        try (WarpdpClient client = WarpdpClient.connect(TestSupport.address())) {
            assertEquals("SERVING", client.health());
            assertNotNull(client.serverInfo().version());
        }
    }
}
