package org.warpdp.test;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import org.junit.Test;
import org.warpdp.gatk.LauncherJar;

/** The launcher jar for GATK's gatk script: GATK's Main-Class and Add-Opens, the shim first on Class-Path. */
public class LauncherJarTest {

    private static Path fakeJar(Path path, String entry, String addOpens) throws Exception {
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        if (addOpens != null) {
            m.getMainAttributes().putValue("Add-Opens", addOpens);
        }
        try (OutputStream o = Files.newOutputStream(path); JarOutputStream jar = new JarOutputStream(o, m)) {
            jar.putNextEntry(new JarEntry(entry));
            jar.closeEntry();
        }
        return path;
    }

    @Test
    public void manifestHasGatksMainAndOpensAndTheShimFirst() throws Exception {
        Path dir = Files.createTempDirectory("warpdp-launcher");
        Path libs = Files.createDirectories(dir.resolve("lib"));
        Path shim = fakeJar(dir.resolve("warpdp-gatk.jar"), "org/warpdp/X.class", null);
        Path dep = fakeJar(libs.resolve("dep one.jar"), "x/Y.class", null);
        Path gatk = fakeJar(libs.resolve("gatk.jar"), "org/broadinstitute/hellbender/Main.class",
                "java.base/java.lang java.base/java.nio");
        Path outside = fakeJar(Files.createTempFile("outside", ".jar"), "z/Z.class", null);
        Path out = dir.resolve("gatk-warpdp.jar");
        LauncherJar.write(out, shim, List.of(dep, gatk, outside));
        try (JarFile jar = new JarFile(out.toFile())) {
            Attributes a = jar.getManifest().getMainAttributes();
            assertEquals("org.broadinstitute.hellbender.Main", a.getValue("Main-Class"));
            assertEquals("java.base/java.lang java.base/java.nio", a.getValue("Add-Opens"));
            assertEquals("warpdp-gatk.jar lib/dep%20one.jar lib/gatk.jar " + outside.toUri(),
                    a.getValue("Class-Path"));
        }
    }

    @Test
    public void refusesJarsWithoutGatk() throws Exception {
        Path dir = Files.createTempDirectory("warpdp-launcher");
        Path shim = fakeJar(dir.resolve("warpdp-gatk.jar"), "org/warpdp/X.class", null);
        Path other = fakeJar(dir.resolve("other.jar"), "x/Y.class", null);
        assertThrows(IllegalArgumentException.class,
                () -> LauncherJar.write(dir.resolve("l.jar"), shim, List.of(other)));
    }
}
