package org.warpdp.client.spi;

import java.lang.reflect.InvocationTargetException;

import org.warpdp.client.ClientOptions;

/** Creates the gRPC {@link Transport} inside the jar's private class loader. */
public final class Transports {
    private static final String GRPC_TRANSPORT = "org.warpdp.client.grpc.GrpcTransport";

    private Transports() {
    }

    /** A transport for these options; the channel connects lazily, on the first call. */
    public static Transport open(ClientOptions options) {
        Class<?> type;
        try {
            IsolatedLoader loader = IsolatedLoader.get();
            // Without the packaged private area (a development class path), gRPC is on the class path itself.
            type = loader != null ? Class.forName(GRPC_TRANSPORT, true, loader) : Class.forName(GRPC_TRANSPORT);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalStateException("the gRPC transport cannot be loaded; is warpdp-gatk.jar complete? "
                    + e, e);
        }
        try {
            return (Transport) type.getConstructor(ClientOptions.class).newInstance(options);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException("cannot create the gRPC transport: " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot create the gRPC transport: " + e, e);
        }
    }
}
