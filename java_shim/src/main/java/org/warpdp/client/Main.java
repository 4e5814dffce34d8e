package org.warpdp.client;

import java.util.Locale;

/**
 * {@code java -jar warpdp-gatk.jar [info|health [--wait SECONDS]] [--address HOST:PORT]}: checks that a
 * server is reachable with the settings GATK would use (system properties / environment).
 * {@code java -jar warpdp-gatk.jar launcher ...} writes a launcher jar for GATK's {@code gatk} script
 * ({@link org.warpdp.gatk.LauncherJar}).
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        if (args.length > 0 && args[0].equals("launcher")) {
            return org.warpdp.gatk.LauncherJar.run(java.util.Arrays.copyOfRange(args, 1, args.length));
        }
        String command = "info";
        String address = null;
        double waitSeconds = 0;
        long serverPid = -1; // stop waiting once this process (a server being started) is gone
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "info", "health", "version", "selftest" -> command = args[i];
                    case "--address" -> address = value(args, ++i);
                    case "--wait" -> waitSeconds = Double.parseDouble(value(args, ++i));
                    case "--pid" -> serverPid = Long.parseLong(value(args, ++i));
                    case "-h", "--help" -> {
                        System.out.println("usage: java -jar warpdp-gatk.jar [info|health|version] [--address HOST:PORT]"
                                + " [--wait SECONDS [--pid PID]]\n       java -jar warpdp-gatk.jar launcher --help"
                                + " (a launcher jar for GATK's gatk script)\n  settings: -Dwarpdp.address, -Dwarpdp.token(.file), -Dwarpdp.tls,"
                                + " ... or WARPDP_ADDRESS, WARPDP_TOKEN, ...");
                        return 0;
                    }
                    default -> {
                        System.err.println("warpdp: unknown argument " + args[i] + " (try --help)");
                        return 2;
                    }
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println("warpdp: " + e.getMessage());
            return 2;
        }
        if (command.equals("version")) {
            System.out.println("warpdp-gatk " + version());
            return 0;
        }
        if (command.equals("selftest")) {
            return selfTest();
        }
        ClientOptions options;
        try {
            options = ClientOptions.fromEnvironment();
            if (address != null) {
                options = new ClientOptions(ClientOptions.splitAddresses(address), options.token(), options.tls(),
                        options.tlsCaFile(), options.deadlineMillis(), options.connectTimeoutMillis(),
                        options.maxCellsPerRequest(), options.retries());
            }
        } catch (IllegalArgumentException e) {
            System.err.println("warpdp: " + e.getMessage());
            return 2;
        }
        try (WarpdpClient client = WarpdpClient.connect(options)) {
            long until = System.nanoTime() + (long) (waitSeconds * 1e9);
            String status;
            while (true) {
                try {
                    status = client.health();
                } catch (WarpdpException e) {
                    status = e.getMessage();
                }
                if (status.equals("SERVING") || System.nanoTime() >= until) {
                    break;
                }
                if (serverPid > 0 && !ProcessHandle.of(serverPid).map(ProcessHandle::isAlive).orElse(false)) {
                    status = "the server process " + serverPid + " exited";
                    break;
                }
                Thread.sleep(200);
            }
            if (!status.equals("SERVING")) {
                System.err.println("warpdp: " + options.target() + ": " + status);
                return 1;
            }
            if (command.equals("health")) {
                System.out.println(options.target() + ": SERVING");
                return 0;
            }
            ServerInfo info = client.serverInfo();
            System.out.println(options.target() + ": " + info.summary());
            System.out.printf(Locale.ROOT, "  limits: %d cells, %d bytes per request; token %s; batching %s%n",
                    info.maxRequestCells(), info.maxMessageBytes(), info.tokenRequired() ? "required" : "not required",
                    info.batching().enabled() ? "on (max wait " + info.batching().maxWaitMicros() + " us)" : "off");
            for (ServerInfo.Algorithm a : info.algorithms()) {
                System.out.println("  " + a.name() + " (" + a.rpc() + "): " + a.backend()
                        + (a.detail().isEmpty() ? "" : ", " + a.detail()));
            }
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        } catch (RuntimeException e) {
            System.err.println("warpdp: " + e.getMessage());
            return 1;
        }
    }

    // Packaging check: the relocated gRPC classes load and a call to a closed port fails as UNAVAILABLE.
    private static int selfTest() {
        try (WarpdpClient client = WarpdpClient.connect(ClientOptions.of("127.0.0.1:1").withRetries(0))) {
            client.health();
            System.err.println("warpdp selftest: something answers on 127.0.0.1:1");
            return 1;
        } catch (WarpdpException e) {
            if (!e.isUnavailable()) {
                System.err.println("warpdp selftest: expected UNAVAILABLE, got " + e.getMessage());
                return 1;
            }
            System.out.println("warpdp-gatk " + version() + ": ok");
            return 0;
        } catch (RuntimeException | LinkageError e) {
            e.printStackTrace();
            return 1;
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            throw new IllegalArgumentException("missing value after " + args[i - 1]);
        }
        return args[i];
    }

    static String version() {
        String v = Main.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
