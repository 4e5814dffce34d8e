package com.intel.gkl.smithwaterman;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.smithwaterman.SWAlignerNativeBinding;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;
import org.warpdp.gatk.GklFallback;
import org.warpdp.gatk.WarpdpSmithWaterman;

/**
 * Stands in for GKL's native Smith-Waterman: GATK instantiates this class by name for
 * {@code --smith-waterman FASTEST_AVAILABLE} (GATK 4.6's default; {@code SmithWatermanIntelAligner}). With
 * warpdp-gatk.jar before GATK's jar on the class path, GATK gets this class. With
 * {@code warpdp.smithwaterman=server} it aligns on a warpdp server through {@link WarpdpSmithWaterman}, and
 * when the server cannot be reached at {@link #load} it runs GKL's own class of the same name instead
 * ({@link GklFallback}). By default ({@code gkl}) it runs GKL's own class at once: GATK aligns one pair per
 * call, and a round trip per alignment costs far more than GKL's native code in process (docs/gatk.md).
 */
public class IntelSmithWaterman implements SWAlignerNativeBinding {
    private static final String GKL_CLASS = "com.intel.gkl.smithwaterman.IntelSmithWaterman";
    private final WarpdpSmithWaterman warpdp = new WarpdpSmithWaterman();
    private volatile SWAlignerNativeBinding active; // warpdp, GKL's own, or null before a successful load()

    public IntelSmithWaterman() {
    }

    /** With {@code warpdp.smithwaterman=server}, connects to the warpdp server and, when it is unreachable,
     * loads GKL's own implementation (unless {@code warpdp.fallback=none}); by default loads GKL's own
     * implementation. False when nothing that was asked for works. */
    @Override
    public synchronized boolean load(File tempDir) {
        if (active == null) {
            active = WarpdpSmithWaterman.requested()
                    ? GklFallback.serverOrGkl(SWAlignerNativeBinding.class, "Smith-Waterman", GKL_CLASS, tempDir,
                                              warpdp, warpdp::connect)
                    : GklFallback.load(SWAlignerNativeBinding.class, "Smith-Waterman", GKL_CLASS, tempDir, null);
        }
        return active != null;
    }

    /**
     * GKL's alignment of {@code alt} against {@code ref} (CIGAR and alignment offset). Inputs are checked
     * the same way whichever implementation runs ({@link WarpdpSmithWaterman#check}).
     */
    @Override
    public SWNativeAlignerResult align(byte[] ref, byte[] alt, SWParameters parameters, SWOverhangStrategy strategy) {
        SWAlignerNativeBinding a = active;
        if (a != warpdp) {
            WarpdpSmithWaterman.check(ref, alt, parameters, strategy);
        }
        return (a != null ? a : warpdp).align(ref, alt, parameters, strategy);
    }

    /** Releases the server connection, or GKL's native state. */
    @Override
    public synchronized void close() {
        SWAlignerNativeBinding a = active;
        active = null;
        if (a != null && a != warpdp) {
            a.close();
        }
        warpdp.close();
    }

    /** The implementation in use: {@link #warpdp()}, GKL's own (the fallback), or null before load(). */
    public SWAlignerNativeBinding active() {
        return active;
    }

    /** The binding doing the work. */
    public WarpdpSmithWaterman warpdp() {
        return warpdp;
    }
}
