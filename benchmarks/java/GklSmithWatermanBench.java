// GKL's native Smith-Waterman (com.intel.gkl.smithwaterman.IntelSmithWaterman, from Maven Central) called
// one pair at a time as GATK calls it, timed in CPU seconds of the calling thread. Driven by
// benchmarks/gatk_sw.py, which compiles it against GKL's jar (JDK 17: the jdk.incubator.foreign module).
//
//   java --add-modules jdk.incubator.foreign --enable-native-access=ALL-UNNAMED -cp CLASSPATH \
//        GklSmithWatermanBench INPUT.tsv OUTPUT.tsv REPEATS KERNEL
//
// INPUT: one call per line, `ref alt match mismatch gap_open gap_extend overhang group` (tab separated).
// The calls of each group are timed together, group after group, REPEATS times after one warm-up pass.
// KERNEL: "native" keeps the kernel GKL's initNative picked from CPUID; "avx2" or "avx512" points GKL's
// dispatch pointer (g_runSWOnePairBT in libgkl_smithwaterman.so) at that kernel of GKL's own, so the
// calls still go through IntelSmithWaterman.align and its JNI entry point as in GATK.
// Prints `kernel_picked NAME`, `kernel_used NAME`, then `time GROUP REPEAT SECONDS` lines; writes
// `cigar<TAB>alignment_offset` per input line to OUTPUT.
import com.intel.gkl.smithwaterman.IntelSmithWaterman;
import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jdk.incubator.foreign.MemoryAccess;
import jdk.incubator.foreign.MemoryAddress;
import jdk.incubator.foreign.MemorySegment;
import jdk.incubator.foreign.ResourceScope;
import jdk.incubator.foreign.SymbolLookup;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;

public final class GklSmithWatermanBench {
    private static final class Call {
        final byte[] ref, alt;
        final SWParameters parameters;
        final SWOverhangStrategy overhang;

        Call(String[] f) {
            ref = f[0].getBytes(StandardCharsets.US_ASCII);
            alt = f[1].getBytes(StandardCharsets.US_ASCII);
            parameters = new SWParameters(Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                                          Integer.parseInt(f[5]));
            overhang = SWOverhangStrategy.valueOf(f[6]);
        }
    }

    /** A pointer-sized global of the loaded GKL library, as an 8-byte segment. */
    private static MemorySegment global(String name) {
        MemoryAddress address = SymbolLookup.loaderLookup().lookup(name)
            .orElseThrow(() -> new IllegalStateException(name + " not found in libgkl_smithwaterman"));
        return address.asSegment(8, ResourceScope.globalScope());
    }

    private static long kernel(String name) {
        return MemoryAccess.getLong(global("runSWOnePairBT_fp_" + name));
    }

    private static String kernelName(long pointer) {
        return pointer == kernel("avx2") ? "avx2" : pointer == kernel("avx512") ? "avx512" : "unknown";
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            throw new IllegalArgumentException("usage: GklSmithWatermanBench INPUT OUTPUT REPEATS native|avx2|avx512");
        }
        List<Call> calls = new ArrayList<>();
        Map<String, List<Integer>> groups = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.US_ASCII)) {
            String[] f = line.split("\t");
            groups.computeIfAbsent(f[7], k -> new ArrayList<>()).add(calls.size());
            calls.add(new Call(f));
        }
        int repeats = Integer.parseInt(args[2]);
        IntelSmithWaterman aligner = new IntelSmithWaterman();
        if (!aligner.load(null)) { // as GATK loads it
            throw new IllegalStateException("GKL's IntelSmithWaterman did not load (no AVX2?)");
        }
        MemorySegment dispatch = global("g_runSWOnePairBT");
        System.out.println("kernel_picked " + kernelName(MemoryAccess.getLong(dispatch)));
        if (!args[3].equals("native")) {
            MemoryAccess.setLong(dispatch, kernel(args[3]));
        }
        System.out.println("kernel_used " + kernelName(MemoryAccess.getLong(dispatch)));
        SWNativeAlignerResult[] results = new SWNativeAlignerResult[calls.size()];
        for (int k = 0; k < calls.size(); k++) { // warm-up (JIT, caches)
            Call c = calls.get(k);
            results[k] = aligner.align(c.ref, c.alt, c.parameters, c.overhang);
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        for (int r = 0; r < repeats; r++) {
            for (Map.Entry<String, List<Integer>> group : groups.entrySet()) {
                long start = threads.getCurrentThreadCpuTime();
                for (int k : group.getValue()) {
                    Call c = calls.get(k);
                    results[k] = aligner.align(c.ref, c.alt, c.parameters, c.overhang);
                }
                long used = threads.getCurrentThreadCpuTime() - start;
                System.out.println("time " + group.getKey() + " " + r + " " + (used / 1e9));
            }
        }
        try (BufferedWriter out = Files.newBufferedWriter(Paths.get(args[1]), StandardCharsets.US_ASCII)) {
            for (SWNativeAlignerResult result : results) {
                out.write(result.cigar + "\t" + result.alignment_offset + "\n");
            }
        }
    }
}
