package org.warpdp.client;

import java.util.Locale;

/**
 * Parameters of an edit-distance job, as Python's {@code warpdp.EditParams} (same names, defaults and
 * checks): {@code mode} NW (global), SHW (prefix of the target), HW (infix); {@code k} bounds the distance
 * (-1: none; pairs above k report -1); {@code task} DISTANCE, LOCATIONS (every optimal location) or PATH
 * (also the CIGAR, {@code = X I D}); {@code method} EXACT (edlib) or WINDOWED (Scrooge's GenASM, SHW only,
 * with window W in 2..64 and overlap O in 0..W-1). The constructor checks them
 * ({@link IllegalArgumentException}).
 *
 * <pre>{@code
 * EditParams.DEFAULT                                            // nw, no bound, distance, exact
 * EditParams.of(EditParams.Mode.HW).withK(10).withTask(EditParams.Task.PATH)
 * EditParams.windowed(32, 17)                                   // Scrooge's short-read configuration
 * }</pre>
 */
public record EditParams(Mode mode, long k, Task task, Method method, int window, int overlap) {

    /** Largest window (W) of the windowed method. */
    public static final int MAX_WINDOW = 64;

    /** nw, k = -1, distance, exact (window 64 / overlap 33, Scrooge's long-read defaults, unused). */
    public static final EditParams DEFAULT = new EditParams(Mode.NW, -1, Task.DISTANCE, Method.EXACT, 64, 33);

    public enum Mode {
        NW, SHW, HW;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public enum Task {
        DISTANCE, LOCATIONS, PATH;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public enum Method {
        EXACT, WINDOWED;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public EditParams {
        if (mode == null || task == null || method == null) {
            throw new IllegalArgumentException("mode, task and method must not be null");
        }
        if (k < -1) {
            throw new IllegalArgumentException("k must be -1 (no bound) or at least 0, not " + k);
        }
        if (method == Method.WINDOWED) {
            if (mode != Mode.SHW) {
                throw new IllegalArgumentException("mode must be shw with method windowed (GenASM solves the prefix"
                        + " problem), not " + mode.wireName());
            }
            if (window < 2 || window > MAX_WINDOW) {
                throw new IllegalArgumentException("window must be within 2.." + MAX_WINDOW + ", not " + window);
            }
            if (overlap < 0 || overlap >= window) {
                throw new IllegalArgumentException("overlap must be within 0..window-1 = " + (window - 1) + ", not "
                        + overlap);
            }
        }
    }

    /** The defaults in another mode. */
    public static EditParams of(Mode mode) {
        return new EditParams(mode, -1, Task.DISTANCE, Method.EXACT, 64, 33);
    }

    /** Scrooge's windowed GenASM (mode shw) with window W and overlap O. */
    public static EditParams windowed(int window, int overlap) {
        return new EditParams(Mode.SHW, -1, Task.DISTANCE, Method.WINDOWED, window, overlap);
    }

    public EditParams withK(long newK) {
        return new EditParams(mode, newK, task, method, window, overlap);
    }

    public EditParams withTask(Task newTask) {
        return new EditParams(mode, k, newTask, method, window, overlap);
    }
}
