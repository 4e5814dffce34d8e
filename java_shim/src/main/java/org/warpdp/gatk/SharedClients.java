package org.warpdp.gatk;

import java.util.HashMap;
import java.util.Map;
import java.util.logging.Logger;

import org.warpdp.client.ClientOptions;
import org.warpdp.client.ServerInfo;
import org.warpdp.client.WarpdpClient;

/**
 * One client (one gRPC channel) per distinct options, shared by every binding in the JVM: GATK creates a
 * Pair-HMM per thread or per partition, and they should not each open connections. The channel closes
 * when the last binding using it calls {@code done()}.
 */
final class SharedClients {
    private static final Logger LOG = Logger.getLogger("org.warpdp");
    private static final Map<ClientOptions, Entry> CLIENTS = new HashMap<>();

    private static final class Entry {
        final WarpdpClient client;
        int users;

        Entry(WarpdpClient client) {
            this.client = client;
        }
    }

    private SharedClients() {
    }

    static synchronized WarpdpClient acquire(ClientOptions options) {
        Entry e = CLIENTS.get(options);
        if (e == null) {
            e = new Entry(WarpdpClient.connect(options));
            CLIENTS.put(options, e);
        }
        e.users++;
        return e.client;
    }

    /**
     * A shared client whose server is healthy ({@code options}, or null for the {@code warpdp.*} settings),
     * with "warpdp KERNEL: server ADDRESS: info" logged; throws a RuntimeException saying why not (the
     * client is then released).
     */
    static WarpdpClient acquireServing(ClientOptions options, String kernel) {
        ClientOptions o = options != null ? options : ClientOptions.fromEnvironment();
        WarpdpClient candidate = acquire(o);
        try {
            String status = candidate.health();
            if (!"SERVING".equals(status)) {
                throw new IllegalStateException("the server at " + o.target() + " is " + status);
            }
            ServerInfo info = candidate.serverInfo();
            LOG.info("warpdp " + kernel + ": server " + o.target() + ": " + info.summary());
            return candidate;
        } catch (RuntimeException e) {
            release(candidate);
            throw e;
        }
    }

    static void release(WarpdpClient client) {
        WarpdpClient toClose = null;
        synchronized (SharedClients.class) {
            Entry e = CLIENTS.get(client.options());
            if (e != null && e.client == client && --e.users == 0) {
                CLIENTS.remove(client.options());
                toClose = client;
            }
        }
        if (toClose != null) {
            toClose.close(); // outside the lock: closing waits for the channel
        }
    }

    /** Open channels (for tests). */
    static synchronized int open() {
        return CLIENTS.size();
    }
}
