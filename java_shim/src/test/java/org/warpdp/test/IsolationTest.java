package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.junit.Test;
import org.warpdp.client.WarpdpClient;

/**
 * warpdp-gatk.jar cannot clash with an application's libraries (GATK brings its own gRPC, netty, protobuf
 * and guava): every class in it is ours or relocated under org.warpdp.shaded, and its service files name only
 * relocated classes. The test class path holds decoys of com.google.protobuf.ByteString and
 * com.google.common.base.Preconditions, standing for GATK's own versions; the client ignores them.
 */
public class IsolationTest {
    private static final String[] OWN = {"org/warpdp/", "com/intel/gkl/pairhmm/IntelPairHmm.class",
        "com/intel/gkl/pairhmm/IntelPairHmmOMP.class", "com/intel/gkl/smithwaterman/IntelSmithWaterman.class"};

    private static File jar() {
        File jar = new File(WarpdpClient.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        assertTrue("the tests must run against warpdp-gatk.jar, not " + jar, jar.getName().equals("warpdp-gatk.jar"));
        return jar;
    }

    private static boolean own(String entry) {
        for (String prefix : OWN) {
            if (entry.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    @Test
    public void everyClassIsOursOrRelocated() throws IOException {
        List<String> foreign = new ArrayList<>();
        int relocated = 0;
        try (JarFile jar = new JarFile(jar())) {
            for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                String name = e.nextElement().getName();
                if (name.endsWith(".class") && !own(name)) {
                    foreign.add(name);
                }
                if (name.startsWith("org/warpdp/shaded/io/grpc/")) {
                    relocated++;
                }
                if (name.startsWith("META-INF/services/")) {
                    assertTrue("service file not relocated: " + name, name.startsWith("META-INF/services/org.warpdp.")
                            || name.endsWith("/"));
                    if (!name.endsWith("/")) {
                        String text = new String(jar.getInputStream(jar.getEntry(name)).readAllBytes(),
                                StandardCharsets.UTF_8);
                        for (String line : text.split("\n")) {
                            String l = line.strip();
                            assertTrue(name + " names " + l, l.isEmpty() || l.startsWith("#")
                                    || l.startsWith("org.warpdp."));
                        }
                    }
                }
            }
        }
        assertEquals("classes outside org.warpdp and GKL's two names", List.of(), foreign);
        assertTrue("gRPC is packaged (relocated)", relocated > 100);
    }

    @Test
    public void unrelocatedLibrariesAreNotVisible() throws Exception {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.grpc.ManagedChannel"));
        assertThrows(ClassNotFoundException.class,
                () -> Class.forName("io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder"));
        assertNotNull(Class.forName("org.warpdp.shaded.io.grpc.ManagedChannel"));
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
