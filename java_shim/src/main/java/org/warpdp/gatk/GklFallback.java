package org.warpdp.gatk;

import java.io.File;
import java.io.IOException;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.logging.Logger;

import org.broadinstitute.gatk.nativebindings.NativeLibrary;

/**
 * Intel GKL's own native Pair-HMM and Smith-Waterman, for when the warpdp server cannot be reached: our jar takes GKL's class
 * names, so GKL's classes are loaded again, from the jar that holds them further down the class path
 * (GATK's GKL jar, or GATK's own packaged jar), in a class loader that defines {@code com.intel.gkl.*}
 * itself and takes everything else (GATK's interfaces, the JDK, logging) from ours. Shading cannot do this:
 * the names must stay GKL's for GKL's native code to bind.
 *
 * <p>Setting {@code warpdp.fallback} (or {@code WARPDP_FALLBACK}): {@code gkl} (default) or {@code none}
 * (load() then fails as without the fallback, and GATK falls back to its Java Pair-HMM / Smith-Waterman or
 * stops).
 */
public final class GklFallback {
    private static final Logger LOG = Logger.getLogger("org.warpdp");
    private static final String PROBE = "com/intel/gkl/pairhmm/IntelPairHmm.class";
    private static final Set<String> ANNOUNCED = ConcurrentHashMap.newKeySet();
    private static ClassLoader loader;
    private static String origin;

    private GklFallback() {
    }

    /** Whether the fallback is enabled (the default). */
    public static boolean enabled() {
        return !gklOr("warpdp.fallback", "WARPDP_FALLBACK", "none").equals("none");
    }

    /**
     * A two-way setting whose default is {@code gkl}: system property {@code property}, else environment variable
     * {@code env} when the property is blank, lower-cased; anything but {@code gkl} or {@code other} is warned
     * about and read as {@code gkl}.
     */
    static String gklOr(String property, String env, String other) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            v = System.getenv(env);
        }
        v = v == null || v.isBlank() ? "gkl" : v.strip().toLowerCase(Locale.ROOT);
        if (!v.equals("gkl") && !v.equals(other)) {
            LOG.warning(property + "=" + v + " is neither gkl nor " + other + "; using gkl");
        }
        return v;
    }

    /**
     * What a stand-in for GKL's {@code className} runs on: {@code server} (warpdp's binding of {@code kernel})
     * when {@code connect} reaches the server (returns null; else it returns why not), else GKL's own
     * {@code className} ({@link #load}, null when it does not load here). With the fallback off
     * ({@code warpdp.fallback=none}), the server's own {@code load} alone decides: {@code server}, or null.
     */
    public static <T extends NativeLibrary> T serverOrGkl(Class<T> type, String kernel, String className,
                                                          File tempDir, T server, Supplier<String> connect) {
        if (!enabled()) {
            return server.load(tempDir) ? server : null;
        }
        String failure = connect.get();
        return failure == null ? server : load(type, kernel, className, tempDir, failure);
    }

    /**
     * GKL's {@code className} of type {@code type} (a GATK native binding; {@code kernel} names it in messages),
     * loaded and with its native library in place, or null (with a warning) when GKL is not on the class path
     * or its native code does not load here. {@code reason}: why the server is not used; null when GKL's code
     * is what was asked for (then the choice is logged at INFO, not as a warning). The switch to GKL is
     * logged once per JVM and kernel.
     */
    public static <T extends NativeLibrary> T load(Class<T> type, String kernel, String className, File tempDir,
                                                   String reason) {
        String why = reason != null ? "warpdp " + kernel + " not available (" + reason + ")"
                : "warpdp " + kernel + ": GKL's own asked for";
        try {
            ClassLoader gkl = gklLoader();
            if (gkl == null) {
                LOG.warning(why + ", and GKL's own " + kernel + " is not on the class path");
                return null;
            }
            T binding = type.cast(Class.forName(className, true, gkl).getConstructor().newInstance());
            if (!binding.load(tempDir)) {
                LOG.warning(why + ", and GKL's " + className + " does not load on this machine (no AVX?)");
                return null;
            }
            // Once per JVM and kernel: Spark makes a Pair-HMM per partition, GATK several aligners.
            if (ANNOUNCED.add(reason != null ? kernel : kernel + " (asked for)")) {
                if (reason != null) {
                    LOG.warning(why + "; using Intel GKL's own " + className + " from " + origin + " instead");
                } else {
                    LOG.info("warpdp " + kernel + ": using Intel GKL's own " + className + " from " + origin);
                }
            }
            return binding;
        } catch (ReflectiveOperationException | IOException | LinkageError | ClassCastException e) {
            LOG.warning(why + ", and GKL's " + className + " cannot be loaded: " + e);
            return null;
        }
    }

    /** Whether the switch to GKL's {@code kernel} ("Pair-HMM", "Smith-Waterman") was logged in this JVM (for tests). */
    public static boolean announced(String kernel) {
        return ANNOUNCED.contains(kernel);
    }

    /** The class loader of the GKL copy in use, or null before one was loaded (for tests). */
    public static synchronized ClassLoader loaderInUse() {
        return loader;
    }

    // One loader for the JVM: GKL's native library is loaded once per class loader.
    private static synchronized ClassLoader gklLoader() throws IOException {
        if (loader != null) {
            return loader;
        }
        ClassLoader ours = GklFallback.class.getClassLoader();
        URL ownJar = GklFallback.class.getProtectionDomain().getCodeSource().getLocation();
        List<URL> copies = Collections.list(ours.getResources(PROBE));
        for (URL copy : copies) {
            URL root = root(copy);
            if (root != null && !sameFile(root, ownJar)) {
                origin = root.toString();
                loader = new GklLoader(root, ours);
                return loader;
            }
        }
        return null;
    }

    // The jar file or folder a class file URL comes from.
    private static URL root(URL classFile) throws IOException {
        if ("jar".equals(classFile.getProtocol())) {
            return ((JarURLConnection) classFile.openConnection()).getJarFileURL();
        }
        String s = classFile.toString();
        return s.endsWith(PROBE) ? new URL(s.substring(0, s.length() - PROBE.length())) : null;
    }

    private static boolean sameFile(URL a, URL b) {
        return b != null && a.getPath().equals(b.getPath());
    }

    /**
     * A class loader that defines GKL's classes (and finds GKL's resources, its native libraries) from
     * {@code root}, GKL's jar or class folder, and takes everything else from {@code parent}: GKL's own
     * classes even where warpdp's shadow their names.
     */
    public static ClassLoader isolatedLoader(URL root, ClassLoader parent) {
        return new GklLoader(root, parent);
    }

    /** Defines GKL's classes from its own jar; everything else comes from the parent. */
    private static final class GklLoader extends URLClassLoader {
        static {
            registerAsParallelCapable();
        }

        GklLoader(URL root, ClassLoader parent) {
            super("warpdp-gkl-fallback", new URL[] {root}, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("com.intel.gkl.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    c = findClass(name);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }

        // GKL finds its native libraries as resources of its own classes: those must be its jar's too.
        @Override
        public URL getResource(String name) {
            if (name.startsWith("com/intel/gkl/")) {
                URL url = findResource(name);
                if (url != null) {
                    return url;
                }
            }
            return super.getResource(name);
        }
    }
}
