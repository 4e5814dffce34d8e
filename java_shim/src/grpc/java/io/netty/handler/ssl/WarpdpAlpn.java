package io.netty.handler.ssl;

import java.io.File;

import javax.net.ssl.SSLException;

import io.netty.handler.codec.http2.Http2SecurityUtil;

/**
 * TLS client context with ALPN "h2" on the JDK's own TLS engine (Java 9+), for gRPC.
 *
 * <p>Why this exists: Debian's netty leaves out {@code JdkAlpnApplicationProtocolNegotiator}, so gRPC's usual
 * {@code GrpcSslContexts.forClient()} fails with "JDK provider does not support ALPN protocol". This class
 * puts together the same negotiator from the pieces Debian keeps ({@link Java9SslEngine} and
 * {@link JdkBaseApplicationProtocolNegotiator}). It sits in netty's package to reach them, inside the
 * jar's private class loader only, and is compiled against Debian's netty, so a change there fails the
 * build rather than a TLS connection.
 */
public final class WarpdpAlpn {
    private WarpdpAlpn() {
    }

    /**
     * @param trustCertCollection PEM trust roots, or null for the JVM's default trust store
     */
    @SuppressWarnings("deprecation") // the JdkSslClientContext constructor taking a JdkApplicationProtocolNegotiator
    public static SslContext clientContext(File trustCertCollection) throws SSLException {
        JdkApplicationProtocolNegotiator alpn = new JdkBaseApplicationProtocolNegotiator(
                (engine, negotiator, isServer) -> new Java9SslEngine(engine, negotiator, isServer),
                JdkBaseApplicationProtocolNegotiator.FAIL_SELECTOR_FACTORY,
                JdkBaseApplicationProtocolNegotiator.FAIL_SELECTION_LISTENER_FACTORY, "h2");
        return new JdkSslClientContext(trustCertCollection, null, Http2SecurityUtil.CIPHERS,
                SupportedCipherSuiteFilter.INSTANCE, alpn, 0, 0);
    }
}
