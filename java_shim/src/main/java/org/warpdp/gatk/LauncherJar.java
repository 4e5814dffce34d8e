package org.warpdp.gatk;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

/**
 * Writes a launcher jar for GATK's {@code gatk} script, which starts GATK with {@code java -jar
 * $GATK_LOCAL_JAR} and so ignores any class path: a jar with no classes whose manifest has GATK's
 * {@code Main-Class}, a {@code Class-Path} with warpdp-gatk.jar before GATK's jar(s), and GATK's
 * {@code Add-Opens} (only the jar run by {@code java -jar} is read for those).
 *
 * <pre>java -jar warpdp-gatk.jar launcher --gatk gatk-package-4.6.2.0-local.jar -o gatk-warpdp.jar</pre>
 */
public final class LauncherJar {
    private static final String GATK_MAIN = "org.broadinstitute.hellbender.Main";
    private static final String USAGE = "usage: java -jar warpdp-gatk.jar launcher --gatk JAR[:JAR...] -o OUT.jar"
            + " [--shim warpdp-gatk.jar]\n  --gatk: GATK's local jar (gatk-package-*-local.jar), or GATK's jar and its"
            + " dependencies as a class path";

    private LauncherJar() {
    }

    /** The {@code launcher} command; returns the exit status. */
    public static int run(String[] args) {
        String gatk = null;
        String out = null;
        String shim = null;
        for (int i = 0; i < args.length; i++) {
            String next = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--gatk" -> gatk = next;
                case "-o", "--output" -> out = next;
                case "--shim" -> shim = next;
                case "-h", "--help" -> {
                    System.out.println(USAGE);
                    return 0;
                }
                default -> {
                    System.err.println("warpdp launcher: unknown argument " + args[i] + "\n" + USAGE);
                    return 2;
                }
            }
            i++;
        }
        if (gatk == null || out == null) {
            System.err.println(USAGE);
            return 2;
        }
        try {
            Path shimJar = shim != null ? Path.of(shim) : ownJar();
            List<Path> gatkJars = new ArrayList<>();
            for (String p : gatk.split(File.pathSeparator)) {
                if (!p.isBlank()) {
                    gatkJars.add(Path.of(p));
                }
            }
            write(Path.of(out), shimJar, gatkJars);
            System.out.println("wrote " + out + ": GATK_LOCAL_JAR=" + Path.of(out).toAbsolutePath()
                    + " gatk HaplotypeCaller --java-options \"-Dwarpdp.address=HOST:PORT\" ...");
            return 0;
        } catch (IOException | IllegalArgumentException | URISyntaxException e) {
            System.err.println("warpdp launcher: " + e.getMessage());
            return 1;
        }
    }

    /** Writes the launcher: the shim first, then GATK's jars, with GATK's Main-Class and Add-Opens. */
    public static void write(Path out, Path shimJar, List<Path> gatkJars) throws IOException {
        if (!Files.isRegularFile(shimJar)) {
            throw new IllegalArgumentException("no warpdp-gatk.jar at " + shimJar);
        }
        Manifest gatkManifest = null;
        for (Path jar : gatkJars) {
            if (!Files.isRegularFile(jar)) {
                throw new IllegalArgumentException("no such jar: " + jar);
            }
            try (JarFile j = new JarFile(jar.toFile())) {
                if (j.getEntry(GATK_MAIN.replace('.', '/') + ".class") != null) {
                    gatkManifest = j.getManifest();
                    break;
                }
            }
        }
        if (gatkManifest == null) {
            throw new IllegalArgumentException("none of the --gatk jars holds " + GATK_MAIN);
        }
        Path dir = out.toAbsolutePath().getParent();
        StringBuilder classPath = new StringBuilder(entry(dir, shimJar));
        for (Path jar : gatkJars) {
            classPath.append(' ').append(entry(dir, jar));
        }
        Manifest m = new Manifest();
        Attributes a = m.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.put(Attributes.Name.MAIN_CLASS, GATK_MAIN);
        a.put(Attributes.Name.CLASS_PATH, classPath.toString());
        String opens = gatkManifest.getMainAttributes().getValue("Add-Opens");
        if (opens != null) {
            a.putValue("Add-Opens", opens);
        }
        a.putValue("Created-By", "warpdp-gatk launcher");
        Files.createDirectories(dir);
        try (OutputStream o = Files.newOutputStream(out); JarOutputStream jar = new JarOutputStream(o, m)) {
            jar.flush();
        }
    }

    // Relative to the launcher's folder when below it (the launcher can move with its jars), else absolute.
    private static String entry(Path dir, Path jar) {
        Path abs = jar.toAbsolutePath().normalize();
        if (abs.startsWith(dir)) {
            return dir.relativize(abs).toString().replace(File.separatorChar, '/').replace(" ", "%20");
        }
        return abs.toUri().toString();
    }

    private static Path ownJar() throws URISyntaxException {
        return Path.of(LauncherJar.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }
}
