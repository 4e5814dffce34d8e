package org.warpdp.client.grpc;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLException;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;

import io.grpc.EquivalentAddressGroup;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.netty.handler.ssl.WarpdpAlpn;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.netty.util.internal.logging.JdkLoggerFactory;

import org.warpdp.client.ClientOptions;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.ServerInfo;
import org.warpdp.client.WarpdpException;
import org.warpdp.client.grpc.health.HealthCheckRequest;
import org.warpdp.client.grpc.health.HealthGrpc;
import org.warpdp.client.spi.Transport;
import org.warpdp.v1.PairHmmReply;
import org.warpdp.v1.PairHmmRequest;
import org.warpdp.v1.ServerInfoReply;
import org.warpdp.v1.ServerInfoRequest;
import org.warpdp.v1.WarpdpGrpc;

/** {@link Transport} over a gRPC (netty) channel; lives in the jar's private class loader. */
public final class GrpcTransport implements Transport {
    static {
        // Netty would otherwise pick up whatever logging framework the application has (log4j, slf4j).
        InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE);
    }

    private static final String LIST_SCHEME = "warpdp-list";
    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final ManagedChannel channel;
    private final String target;
    private final int servers;

    public GrpcTransport(ClientOptions options) {
        this.target = options.target();
        List<String> addresses = options.addresses();
        NettyChannelBuilder builder;
        if (addresses.size() == 1) {
            builder = NettyChannelBuilder.forTarget(addresses.get(0));
            // A dns:/// target may name several servers: spread calls over all of them.
            if (addresses.get(0).contains(":///")) {
                builder.defaultLoadBalancingPolicy("round_robin");
            }
        } else {
            builder = listChannel(addresses);
        }
        this.servers = addresses.size();
        if (options.tls()) {
            builder.useTransportSecurity();
            File ca = options.tlsCaFile() == null ? null : new File(options.tlsCaFile());
            try {
                builder.sslContext(WarpdpAlpn.clientContext(ca));
            } catch (SSLException | IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot set up TLS" + (ca == null ? "" : " with the trust roots "
                        + ca) + ": " + e.getMessage(), e);
            }
        } else {
            builder.usePlaintext();
        }
        if (options.token() != null) {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, "Bearer " + options.token());
            builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
        }
        // Replies are bounded by the server's own message limit; ours must not be the smaller one.
        builder.maxInboundMessageSize(Integer.MAX_VALUE).userAgent("warpdp-java");
        this.channel = builder.build();
    }

    // A fixed list of servers: our own name resolver hands gRPC all of them, round_robin spreads the calls
    // and skips servers that are down.
    @SuppressWarnings("deprecation") // nameResolverFactory: the only per-channel resolver hook in gRPC 1.41
    private static NettyChannelBuilder listChannel(List<String> addresses) {
        List<EquivalentAddressGroup> groups = new ArrayList<>();
        for (String address : addresses) {
            int colon = address.lastIndexOf(':');
            String host = address.substring(0, colon).replace("[", "").replace("]", "");
            groups.add(new EquivalentAddressGroup(new InetSocketAddress(host, Integer.parseInt(address.substring(
                    colon + 1)))));
        }
        NameResolver.Factory factory = new NameResolver.Factory() {
            @Override
            public NameResolver newNameResolver(URI uri, NameResolver.Args args) {
                return LIST_SCHEME.equals(uri.getScheme()) ? new StaticResolver(groups) : null;
            }

            @Override
            public String getDefaultScheme() {
                return LIST_SCHEME;
            }
        };
        return NettyChannelBuilder.forTarget(LIST_SCHEME + ":///servers")
                .nameResolverFactory(factory)
                .defaultLoadBalancingPolicy("round_robin");
    }

    private static final class StaticResolver extends NameResolver {
        private final List<EquivalentAddressGroup> groups;

        StaticResolver(List<EquivalentAddressGroup> groups) {
            this.groups = groups;
        }

        @Override
        public String getServiceAuthority() {
            SocketAddress first = groups.get(0).getAddresses().get(0);
            return first instanceof InetSocketAddress a ? a.getHostString() + ":" + a.getPort() : "servers";
        }

        @Override
        public void start(Listener2 listener) {
            listener.onResult(ResolutionResult.newBuilder().setAddresses(groups).build());
        }

        @Override
        public void shutdown() {
        }
    }

    @Override
    public String health(String service, long timeoutMillis) {
        try {
            return HealthGrpc.newBlockingStub(channel).withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
                    .check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus().name();
        } catch (StatusRuntimeException e) {
            throw failure("health check", e);
        }
    }

    @Override
    public ServerInfo serverInfo(long timeoutMillis) {
        ServerInfoReply r;
        try {
            r = WarpdpGrpc.newBlockingStub(channel).withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
                    .serverInfo(ServerInfoRequest.getDefaultInstance());
        } catch (StatusRuntimeException e) {
            throw failure("ServerInfo", e);
        }
        List<ServerInfo.Algorithm> algorithms = new ArrayList<>();
        r.getAlgorithmsList().forEach(a -> algorithms.add(
                new ServerInfo.Algorithm(a.getName(), a.getRpc(), a.getBackend(), a.getDetail())));
        List<ServerInfo.Device> devices = new ArrayList<>();
        r.getDevicesList().forEach(d -> devices.add(new ServerInfo.Device(d.getKind(), d.getIndex(), d.getName(),
                d.getMemoryBytes(), d.getCores(), d.getDetail())));
        return new ServerInfo(r.getVersion(), r.getBackend(), r.getRequestedBackend(), algorithms, devices,
                r.getLimits().getMaxRequestCells(), r.getLimits().getMaxMessageBytes(),
                new ServerInfo.Batching(r.getBatching().getEnabled(), r.getBatching().getMaxWaitUs(),
                        r.getBatching().getMaxBatchCells(), r.getBatching().getWorkers()),
                r.getTokenRequired());
    }

    @Override
    public void pairHmm(List<PairHmmBatches> requests, boolean useDouble, double[] out, int offset,
                        long deadlineMillis) {
        int[] starts = new int[requests.size() + 1];
        starts[0] = offset;
        for (int i = 0; i < requests.size(); i++) {
            starts[i + 1] = Math.addExact(starts[i], Math.toIntExact(requests.get(i).nPairs()));
        }
        if (requests.size() == 1) {
            WarpdpGrpc.WarpdpBlockingStub stub = WarpdpGrpc.newBlockingStub(channel);
            if (deadlineMillis > 0) {
                stub = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS);
            }
            try {
                store(stub.pairHmm(request(requests.get(0), useDouble)), out, starts[0], starts[1], "the reply");
            } catch (StatusRuntimeException e) {
                throw failure("PairHmm", e);
            }
            return;
        }
        // One stream per server (round_robin puts each new call on the next one), each with a contiguous run.
        int streams = Math.min(servers, requests.size());
        List<CompletableFuture<Void>> calls = new ArrayList<>();
        for (int s = 0; s < streams; s++) {
            int from = (int) ((long) requests.size() * s / streams);
            int to = (int) ((long) requests.size() * (s + 1) / streams);
            calls.add(stream(requests.subList(from, to), starts, from, useDouble, out, deadlineMillis));
        }
        try {
            for (CompletableFuture<Void> call : calls) {
                call.get();
            }
        } catch (ExecutionException e) {
            calls.forEach(c -> c.cancel(true));
            Throwable cause = e.getCause();
            if (cause instanceof StatusRuntimeException sre) {
                throw failure("PairHmmStream", sre);
            }
            if (cause instanceof WarpdpException we) {
                throw we;
            }
            throw new WarpdpException("INTERNAL", "PairHmmStream to " + target + " failed: " + cause, cause);
        } catch (InterruptedException e) {
            calls.forEach(c -> c.cancel(true));
            Thread.currentThread().interrupt();
            throw new WarpdpException("CANCELLED", "interrupted while waiting for " + target, e);
        }
    }

    // Sends the requests as the transport can take them (flow control: at most one buffered chunk), and
    // stores each reply where its chunk's results belong.
    private CompletableFuture<Void> stream(List<PairHmmBatches> requests, int[] starts, int first, boolean useDouble,
                                           double[] out, long deadlineMillis) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        WarpdpGrpc.WarpdpStub stub = WarpdpGrpc.newStub(channel);
        if (deadlineMillis > 0) {
            stub = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS);
        }
        stub.pairHmmStream(new ClientResponseObserver<PairHmmRequest, PairHmmReply>() {
            private ClientCallStreamObserver<PairHmmRequest> call;
            private int sent;
            private int received;
            private boolean halfClosed;

            @Override
            public void beforeStart(ClientCallStreamObserver<PairHmmRequest> requestStream) {
                call = requestStream;
                requestStream.setOnReadyHandler(this::sendMore);
                // A failed or abandoned job also stops the server's work on it (no-op once the call is over).
                done.whenComplete((ok, error) -> {
                    if (error != null) {
                        requestStream.cancel("the job was abandoned", error);
                    }
                });
            }

            private synchronized void sendMore() {
                while (call.isReady() && sent < requests.size() && !done.isDone()) {
                    call.onNext(request(requests.get(sent++), useDouble));
                }
                if (sent == requests.size() && !halfClosed) {
                    halfClosed = true;
                    call.onCompleted();
                }
            }

            @Override
            public synchronized void onNext(PairHmmReply reply) {
                if (reply.getChunk() != received || received >= requests.size()) {
                    done.completeExceptionally(new WarpdpException("INTERNAL", "PairHmmStream to " + target
                            + " answered chunk " + reply.getChunk() + " where chunk " + received + " was due"));
                    return;
                }
                int k = first + received;
                try {
                    store(reply, out, starts[k], starts[k + 1], "reply " + received);
                } catch (WarpdpException e) {
                    done.completeExceptionally(e);
                    return;
                }
                received++;
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public synchronized void onCompleted() {
                if (received != requests.size()) {
                    done.completeExceptionally(new WarpdpException("INTERNAL", "PairHmmStream to " + target
                            + " ended after " + received + " of " + requests.size() + " replies"));
                } else {
                    done.complete(null);
                }
            }
        });
        return done;
    }

    private void store(PairHmmReply reply, double[] out, int from, int to, String what) {
        ByteString values = reply.getLog10Likelihoods();
        if (values.size() != 8L * (to - from)) {
            throw new WarpdpException("INTERNAL", "server " + target + " sent " + values.size() / 8.0
                    + " likelihoods in " + what + " where " + (to - from) + " were due");
        }
        values.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asDoubleBuffer().get(out, from, to - from);
    }

    // The arrays go into the message without a copy; they are not changed while the call runs.
    private static PairHmmRequest request(PairHmmBatches b, boolean useDouble) {
        org.warpdp.v1.PairHmmBatches packed = org.warpdp.v1.PairHmmBatches.newBuilder()
                .setReadBases(UnsafeByteOperations.unsafeWrap(b.readBases()))
                .setReadQuals(UnsafeByteOperations.unsafeWrap(b.readQuals()))
                .setReadIns(UnsafeByteOperations.unsafeWrap(b.readIns()))
                .setReadDel(UnsafeByteOperations.unsafeWrap(b.readDel()))
                .setReadGcp(UnsafeByteOperations.unsafeWrap(b.readGcp()))
                .setReadOffsets(int64(b.readOffsets()))
                .setHapBases(UnsafeByteOperations.unsafeWrap(b.hapBases()))
                .setHapOffsets(int64(b.hapOffsets()))
                .setBatchReads(int64(b.batchReads()))
                .setBatchHaps(int64(b.batchHaps()))
                .build();
        return PairHmmRequest.newBuilder().setBatches(packed).setUseDouble(useDouble).build();
    }

    private static ByteString int64(long[] values) {
        ByteBuffer buffer = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        buffer.asLongBuffer().put(values);
        return UnsafeByteOperations.unsafeWrap(buffer.array());
    }

    private WarpdpException failure(String call, StatusRuntimeException e) {
        Status status = e.getStatus();
        String detail = status.getDescription() != null ? status.getDescription() : "no detail";
        if (status.getCause() != null && status.getCause().getMessage() != null) {
            detail += " (" + status.getCause().getMessage() + ")"; // e.g. "Connection refused"
        }
        return new WarpdpException(status.getCode().name(), call + " to warpdp server " + target + " failed: "
                + status.getCode() + ": " + detail, e);
    }

    @Override
    public void close() {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
