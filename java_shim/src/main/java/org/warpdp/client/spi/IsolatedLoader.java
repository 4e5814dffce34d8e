package org.warpdp.client.spi;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.util.Collections;
import java.util.Enumeration;

/**
 * Loads the jar's private classes (gRPC, protobuf, netty, guava, perfmark, the generated stubs and the
 * gRPC transport), stored under {@value #PREFIX} in the jar, so that they never clash with other versions
 * of the same libraries on the application's class path: GATK's jar brings its own guava, protobuf,
 * gRPC and netty, and our jar must come first on the class path to replace GKL's Pair-HMM classes.
 *
 * <p>Packages the private area provides are closed: a class of theirs that is missing here is missing,
 * never borrowed from the application (gRPC probes for optional netty-epoll or Conscrypt classes by name,
 * and mixing in the application's copies would break). Everything else, including the JDK and
 * {@code org.warpdp.client}, comes from the parent, the loader of this jar.
 */
public final class IsolatedLoader extends ClassLoader {

    /** Folder in the jar holding the private classes and resources. Not a package name, so never loaded
     * by the application's class loader. */
    public static final String PREFIX = "WARPDP-DEPS/";

    private static final String[] OWNED = {"io.grpc.", "io.netty.", "io.perfmark.", "com.google.protobuf.",
        "com.google.common.", "com.google.thirdparty.", "org.conscrypt.", "org.warpdp.v1.",
        "org.warpdp.client.grpc."};

    static {
        registerAsParallelCapable();
    }

    private static volatile IsolatedLoader instance;

    private IsolatedLoader(ClassLoader host) {
        super("warpdp-private", host);
    }

    /** The loader for this jar, or null when the private classes are not packaged (a development class
     * path holding gRPC directly). */
    static IsolatedLoader get() {
        IsolatedLoader loader = instance;
        if (loader == null) {
            synchronized (IsolatedLoader.class) {
                loader = instance;
                if (loader == null) {
                    ClassLoader host = IsolatedLoader.class.getClassLoader();
                    if (host.getResource(PREFIX + "org/warpdp/client/grpc/GrpcTransport.class") == null) {
                        return null;
                    }
                    loader = new IsolatedLoader(host);
                    instance = loader;
                }
            }
        }
        return loader;
    }

    private static boolean owned(String className) {
        for (String prefix : OWNED) {
            if (className.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null) {
                byte[] code = name.startsWith("java.") ? null : read(name.replace('.', '/') + ".class");
                if (code != null) {
                    c = defineClass(name, code, 0, code.length, IsolatedLoader.class.getProtectionDomain());
                } else if (owned(name)) {
                    throw new ClassNotFoundException(name + " (not packaged in warpdp-gatk.jar)");
                } else {
                    c = getParent().loadClass(name);
                }
            }
            if (resolve) {
                resolveClass(c);
            }
            return c;
        }
    }

    private byte[] read(String path) {
        try (InputStream in = getParent().getResourceAsStream(PREFIX + path)) {
            return in == null ? null : in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + PREFIX + path + " from warpdp-gatk.jar", e);
        }
    }

    // Service files (gRPC's providers) and the private packages' resources come only from the private area.
    private static boolean closedResource(String name) {
        return name.startsWith("META-INF/") || owned(name.replace('/', '.'));
    }

    @Override
    public URL getResource(String name) {
        URL url = getParent().getResource(PREFIX + name);
        if (url != null || closedResource(name)) {
            return url;
        }
        return getParent().getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        URL url = getParent().getResource(PREFIX + name);
        if (url != null) {
            return Collections.enumeration(Collections.singletonList(url));
        }
        return closedResource(name) ? Collections.emptyEnumeration() : getParent().getResources(name);
    }
}
