package org.warpdp.client;

import java.util.List;

/** What a server reports about itself (the {@code ServerInfo} RPC), as plain Java values. */
public record ServerInfo(String version, String backend, String requestedBackend, List<Algorithm> algorithms,
                         List<Device> devices, long maxRequestCells, long maxMessageBytes, Batching batching,
                         boolean tokenRequired) {

    public ServerInfo {
        algorithms = List.copyOf(algorithms);
        devices = List.copyOf(devices);
    }

    /** One algorithm the server offers, e.g. name "pairhmm", rpc "PairHmm". */
    public record Algorithm(String name, String rpc, String backend, String detail) {
    }

    /** A device the backend runs on ("cpu" or "gpu"). */
    public record Device(String kind, int index, String name, long memoryBytes, int cores, String detail) {
    }

    /** The server's dynamic batching settings. */
    public record Batching(boolean enabled, int maxWaitMicros, long maxBatchCells, int workers) {
    }

    /** One line for logs: version, backend and devices. */
    public String summary() {
        StringBuilder s = new StringBuilder("warpdp ").append(version).append(", backend ").append(backend);
        for (Device d : devices) {
            s.append(", ").append(d.kind()).append(d.index()).append(' ').append(d.name());
            if (!d.detail().isEmpty()) {
                s.append(" (").append(d.detail()).append(')');
            }
        }
        return s.toString();
    }
}
