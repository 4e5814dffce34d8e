package org.warpdp.client.spi;

import org.warpdp.client.ClientOptions;
import org.warpdp.client.grpc.GrpcTransport;

/** Creates the gRPC {@link Transport}. */
public final class Transports {
    private Transports() {
    }

    /** A transport for these options; the channel connects lazily, on the first call. */
    public static Transport open(ClientOptions options) {
        return new GrpcTransport(options);
    }
}
