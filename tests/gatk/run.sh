#!/usr/bin/env bash
# `make test-gatk`: GATK 4.6.2.0 itself (resolved from Maven Central into ~/.m2) on a synthetic data set
# made here (tests/gatk/make_dataset.py), HaplotypeCaller's Pair-HMM and Smith-Waterman computed three ways:
#   gkl     GKL's own AVX Pair-HMM (--pair-hmm-implementation AVX_LOGLESS_CACHING) and Smith-Waterman
#           (--smith-waterman FASTEST_AVAILABLE, GATK's default), GKL's native code from its jar
#   warpdp  the same options with warpdp-gatk.jar first on the class path through the launcher jar, run as
#           GATK's `gatk` script runs GATK (java ... -jar $GATK_LOCAL_JAR), against a CPU `warpdp serve`,
#           with -Dwarpdp.smithwaterman=server: both kernels on the server (its /metrics count the
#           Smith-Waterman alignments it computed)
#   java    GATK's Java LOGLESS_CACHING (and GKL's Smith-Waterman, GATK's default)
# plus: the launcher with the server down (FASTEST_AVAILABLE for both: the shim falls back to GKL), GVCF mode,
# Mutect2 on a tumour/normal pair, HaplotypeCallerSpark --spark-master local[2] (WARPDP_GATK_SPARK=0 skips
# it), and the replay of the run's Pair-HMM workload. Those other warpdp runs leave warpdp.smithwaterman at its
# default (GKL's own Smith-Waterman through the shim's class), so they check the Pair-HMM alone. tests/gatk/compare.py checks the outputs and prints
# PASS/FAIL lines and 'N passed, N failed'; exits non-zero on any failure.
#
# Needs: java_shim/target/warpdp-gatk.jar (make java-jar), JDK 17, Maven, python3 with warpdp and pysam.
# WARPDP_GATK_OUT: work folder (default build/gatk-test); everything in it is made anew.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${WARPDP_GATK_OUT:-$REPO/build/gatk-test}
SHIM=$REPO/java_shim/target/warpdp-gatk.jar
GATK_POM=$REPO/java_shim/gatk-test/pom.xml
JAVA=${JAVA:-java}
XMX=${WARPDP_GATK_XMX:-3g}

say() { printf '[gatk-test] %s\n' "$*"; }
die() { printf '[gatk-test] error: %s\n' "$*" >&2; exit 1; }

[[ -f $SHIM ]] || die "no $SHIM: run 'make java-jar' first"
rm -rf "$OUT"
mkdir -p "$OUT"
TIMES=$OUT/times.tsv
printf 'step\tseconds\n' > "$TIMES"
START=$SECONDS

# timed NAME CMD...: runs CMD, records its wall time; output goes to $OUT/NAME.log.
timed() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s.%N)
    "$@" > "$OUT/$name.log" 2>&1 || rc=$?
    awk -v n="$name" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%s\t%.1f\n", n, b - a }' >> "$TIMES"
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$OUT/$name.log" >&2
        die "$name failed (exit $rc); log: $OUT/$name.log"
    fi
    say "$name: $(tail -n 1 "$TIMES" | cut -f2) s"
}

say "resolving org.broadinstitute:gatk:4.6.2.0 and its run-time dependencies (Maven Central, cached in ~/.m2)"
timed resolve mvn -B -ntp -q -f "$GATK_POM" dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$OUT/gatk.classpath"
GATK_CP=$(cat "$OUT/gatk.classpath")
# grep reads all its input (no -m1): stopping early would make tr die of SIGPIPE, failing the pipeline.
GATK_JAR=$(tr ':' '\n' < "$OUT/gatk.classpath" | grep '/gatk-4\.6\.2\.0\.jar$') || die "gatk jar not resolved"
GATK_JAR=${GATK_JAR%%$'\n'*}
# GATK's jar names the packages it needs opened; with -cp (not -jar) they must be given on the command line.
mapfile -t OPENS < <(python3 - "$GATK_JAR" <<'PY'
import sys, zipfile
manifest = zipfile.ZipFile(sys.argv[1]).read("META-INF/MANIFEST.MF").decode().replace("\r", "")
for line in manifest.replace("\n ", "").splitlines():
    if line.startswith("Add-Opens:"):
        print("\n".join(f"--add-opens={p}=ALL-UNNAMED" for p in line.split()[1:]))
PY
)
[[ ${#OPENS[@]} -gt 10 ]] || die "no Add-Opens in $GATK_JAR's manifest"

say "making the data set"
timed dataset python3 "$REPO/tests/gatk/make_dataset.py" "$OUT/data" --somatic --somatic-length 100000
D=$OUT/data

say "writing the launcher jar"
timed launcher "$JAVA" -jar "$SHIM" launcher --gatk "$GATK_CP" -o "$OUT/gatk-warpdp.jar"

# What GATK's `gatk` script runs for a non-Spark tool: its default -D options, --java-options, then -jar.
SAMJDK=(-Dsamjdk.use_async_io_read_samtools=false -Dsamjdk.use_async_io_write_samtools=true
        -Dsamjdk.use_async_io_write_tribble=false -Dsamjdk.compression_level=2)
gatk_wrapper() {   # gatk_wrapper "JAVA OPTIONS" TOOL ARGS...  (GATK_LOCAL_JAR from the environment)
    local opts=$1
    shift
    # shellcheck disable=SC2086 # --java-options is split on spaces, as the gatk script does
    "$JAVA" "${SAMJDK[@]}" $opts -jar "$GATK_LOCAL_JAR" "$@"
}
gatk_cp() {        # GATK from the Maven class path, without the shim
    "$JAVA" "${SAMJDK[@]}" "${OPENS[@]}" -Xmx$XMX -cp "$GATK_CP" org.broadinstitute.hellbender.Main "$@"
}

SERVER_PID=
stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}
trap stop_server EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
DEAD_PORT=$(free_port)
METRICS_PORT=$(free_port)
say "starting a CPU warpdp server on 127.0.0.1:$PORT (metrics on port $METRICS_PORT)"
(cd "$REPO" && exec python3 -m warpdp serve --host 127.0.0.1 --port "$PORT" --backend cpu \
    --metrics-port "$METRICS_PORT") > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
"$JAVA" -jar "$SHIM" health --address "127.0.0.1:$PORT" --wait 120 --pid "$SERVER_PID" > /dev/null ||
    { cat "$OUT/server.log" >&2; die "the server did not start"; }

export GATK_LOCAL_JAR=$OUT/gatk-warpdp.jar
WARPDP_OPTS="-Xmx$XMX -Dwarpdp.address=127.0.0.1:$PORT"
HC=(HaplotypeCaller -R "$D/ref.fasta" -I "$D/sample.bam")
REGION=(-L chrS:1-100000)
M2=(Mutect2 -R "$D/ref.fasta" -I "$D/tumor.bam" -I "$D/normal.bam" -normal normal "${REGION[@]}")

# align_pairs FILE: the Smith-Waterman (align) pairs the server has computed so far, from its /metrics.
align_pairs() {
    python3 - "$METRICS_PORT" > "$1" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
print(int(sum(float(line.split()[-1]) for line in text.splitlines()
              if line.startswith('warpdp_pairs_total{algorithm="align"}'))))
PY
}

say "HaplotypeCaller, three Pair-HMMs and Smith-Watermans"
SW=(--smith-waterman FASTEST_AVAILABLE)
timed hc_gkl gatk_cp "${HC[@]}" -O "$OUT/hc_gkl.vcf.gz" --pair-hmm-implementation AVX_LOGLESS_CACHING "${SW[@]}" \
    --pair-hmm-results-file "$OUT/hc_gkl.pairhmm.txt"
align_pairs "$OUT/align_pairs.before"
timed hc_warpdp gatk_wrapper "$WARPDP_OPTS -Dwarpdp.smithwaterman=server" "${HC[@]}" -O "$OUT/hc_warpdp.vcf.gz" \
    --pair-hmm-implementation AVX_LOGLESS_CACHING "${SW[@]}" --pair-hmm-results-file "$OUT/hc_warpdp.pairhmm.txt"
align_pairs "$OUT/align_pairs.after"
SW_ON_SERVER=$(( $(cat "$OUT/align_pairs.after") - $(cat "$OUT/align_pairs.before") ))
# The shim's own count, logged when GATK closes the aligner ("... N alignments on server ...").
SW_BY_SHIM=$(sed -n 's/.*warpdp Smith-Waterman: \([0-9]*\) alignments on server.*/\1/p' "$OUT/hc_warpdp.log" | tail -n 1)
say "hc_warpdp: $SW_ON_SERVER Smith-Waterman alignments on the server, ${SW_BY_SHIM:-no count} logged by the shim"
timed hc_java gatk_cp "${HC[@]}" -O "$OUT/hc_java.vcf.gz" --pair-hmm-implementation LOGLESS_CACHING \
    --pair-hmm-results-file "$OUT/hc_java.pairhmm.txt"

say "HaplotypeCaller through the launcher with the server down (FASTEST_AVAILABLE)"
timed hc_fallback gatk_wrapper "-Xmx$XMX -Dwarpdp.address=127.0.0.1:$DEAD_PORT -Dwarpdp.smithwaterman=server" \
    "${HC[@]}" "${SW[@]}" \
    -O "$OUT/hc_fallback.vcf.gz"

say "HaplotypeCaller -ERC GVCF (first 100 kb)"
timed gvcf_gkl gatk_cp "${HC[@]}" "${REGION[@]}" -ERC GVCF -O "$OUT/gvcf_gkl.g.vcf.gz" \
    --pair-hmm-implementation AVX_LOGLESS_CACHING --pair-hmm-results-file "$OUT/gvcf_gkl.pairhmm.txt"
timed gvcf_warpdp gatk_wrapper "$WARPDP_OPTS" "${HC[@]}" "${REGION[@]}" -ERC GVCF -O "$OUT/gvcf_warpdp.g.vcf.gz" \
    --pair-hmm-implementation AVX_LOGLESS_CACHING --pair-hmm-results-file "$OUT/gvcf_warpdp.pairhmm.txt"

say "Mutect2, tumour/normal (first 100 kb)"
timed m2_gkl gatk_cp "${M2[@]}" -O "$OUT/m2_gkl.vcf.gz" --pair-hmm-implementation AVX_LOGLESS_CACHING \
    --pair-hmm-results-file "$OUT/m2_gkl.pairhmm.txt"
timed m2_warpdp gatk_wrapper "$WARPDP_OPTS" "${M2[@]}" -O "$OUT/m2_warpdp.vcf.gz" \
    --pair-hmm-implementation AVX_LOGLESS_CACHING --pair-hmm-results-file "$OUT/m2_warpdp.pairhmm.txt"

SPARK_VCFS=""
SPARK_LOGS=""
if [[ ${WARPDP_GATK_SPARK:-1} == 1 ]]; then
    say "HaplotypeCallerSpark --spark-master local[2] (first 100 kb)"
    # Spark's driver on the loopback address only (it would otherwise bind the machine's own address).
    export SPARK_LOCAL_IP=127.0.0.1
    SPARK=(HaplotypeCallerSpark -R "$D/ref.fasta" -I "$D/sample.bam" "${REGION[@]}" --spark-master 'local[2]'
           --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1
           --pair-hmm-implementation AVX_LOGLESS_CACHING)
    timed spark_gkl gatk_cp "${SPARK[@]}" -O "$OUT/spark_gkl.vcf.gz"
    timed spark_warpdp gatk_wrapper "$WARPDP_OPTS" "${SPARK[@]}" -O "$OUT/spark_warpdp.vcf.gz"
    SPARK_VCFS=",
    [\"HaplotypeCallerSpark local[2]: gkl vs warpdp\", \"$OUT/spark_gkl.vcf.gz\", \"$OUT/spark_warpdp.vcf.gz\"]"
    SPARK_LOGS=",
    [\"HaplotypeCallerSpark warpdp\", \"$OUT/spark_warpdp.log\", [\"warpdp Pair-HMM: server 127.0.0.1:$PORT\"], \"Loading libgkl_pairhmm\"]"
fi
stop_server

say "the run's Pair-HMM workload, for benchmarks/"
timed workload python3 "$REPO/benchmarks/gatk_workload.py" convert "$OUT/hc_gkl.pairhmm.txt" \
    "$OUT/gatk-hc.in.gz" "$OUT/gatk-hc.gkl.out.gz"
gunzip -k "$OUT/gatk-hc.in.gz" "$OUT/gatk-hc.gkl.out.gz"

cat > "$OUT/checks.json" <<EOF
{
  "tolerance": 1e-4,
  "logs": [
    ["HaplotypeCaller warpdp", "$OUT/hc_warpdp.log", ["warpdp Pair-HMM: server 127.0.0.1:$PORT"], "Loading libgkl_pairhmm"],
    ["HaplotypeCaller gkl", "$OUT/hc_gkl.log", ["Using the AVX-accelerated native PairHMM implementation"], "warpdp Pair-HMM"],
    ["HaplotypeCaller server down", "$OUT/hc_fallback.log", ["; using Intel GKL's own com.intel.gkl.pairhmm.IntelPairHmmOMP",
     "Using the OpenMP multi-threaded AVX-accelerated native PairHMM implementation"], "Pair-HMM not available: "],
    ["HaplotypeCaller warpdp Smith-Waterman", "$OUT/hc_warpdp.log", ["warpdp Smith-Waterman: server 127.0.0.1:$PORT"],
     "Loading libgkl_smithwaterman"],
    ["HaplotypeCaller gkl Smith-Waterman", "$OUT/hc_gkl.log", ["Loading libgkl_smithwaterman"], "warpdp Smith-Waterman"],
    ["HaplotypeCaller server down Smith-Waterman", "$OUT/hc_fallback.log",
     ["; using Intel GKL's own com.intel.gkl.smithwaterman.IntelSmithWaterman"], "warpdp Smith-Waterman: server"],
    ["HaplotypeCaller -ERC GVCF warpdp: GKL's Smith-Waterman by default", "$OUT/gvcf_warpdp.log",
     ["warpdp Smith-Waterman: using Intel GKL's own com.intel.gkl.smithwaterman.IntelSmithWaterman",
      "Using AVX accelerated SmithWaterman implementation"], "warpdp Smith-Waterman: server"]$SPARK_LOGS
  ],
  "sw_counts": [
    ["HaplotypeCaller warpdp: Smith-Waterman alignments computed by the server", $SW_ON_SERVER, ${SW_BY_SHIM:-null}]
  ],
  "identical_vcfs": [
    ["HaplotypeCaller: gkl vs warpdp", "$OUT/hc_gkl.vcf.gz", "$OUT/hc_warpdp.vcf.gz"],
    ["HaplotypeCaller: gkl vs server down (fallback to GKL)", "$OUT/hc_gkl.vcf.gz", "$OUT/hc_fallback.vcf.gz"],
    ["HaplotypeCaller -ERC GVCF: gkl vs warpdp", "$OUT/gvcf_gkl.g.vcf.gz", "$OUT/gvcf_warpdp.g.vcf.gz"],
    ["Mutect2: gkl vs warpdp", "$OUT/m2_gkl.vcf.gz", "$OUT/m2_warpdp.vcf.gz"]$SPARK_VCFS
  ],
  "compare_vcfs": [
    ["HaplotypeCaller: gkl vs Java LOGLESS_CACHING", "$OUT/hc_gkl.vcf.gz", "$OUT/hc_java.vcf.gz"]
  ],
  "compare_hmm": [
    ["HaplotypeCaller: gkl vs Java LOGLESS_CACHING", "$OUT/hc_gkl.pairhmm.txt", "$OUT/hc_java.pairhmm.txt"]
  ],
  "hmm_files": [
    ["HaplotypeCaller", "$OUT/hc_gkl.pairhmm.txt", "$OUT/hc_warpdp.pairhmm.txt"],
    ["HaplotypeCaller -ERC GVCF", "$OUT/gvcf_gkl.pairhmm.txt", "$OUT/gvcf_warpdp.pairhmm.txt"],
    ["Mutect2", "$OUT/m2_gkl.pairhmm.txt", "$OUT/m2_warpdp.pairhmm.txt"]
  ],
  "truth": [
    ["HaplotypeCaller gkl vs truth", "$OUT/hc_gkl.vcf.gz", "$D/truth.vcf.gz", "$D/ref.fasta"],
    ["HaplotypeCaller java vs truth", "$OUT/hc_java.vcf.gz", "$D/truth.vcf.gz", "$D/ref.fasta"]
  ],
  "somatic_truth": [
    ["Mutect2 gkl (unfiltered) vs somatic truth", "$OUT/m2_gkl.vcf.gz", "$D/somatic_truth.vcf.gz", "$D/ref.fasta", "tumor"]
  ],
  "workloads": [
    ["workload replay", "$OUT/gatk-hc.in", "$OUT/gatk-hc.gkl.out"]
  ],
  "times": "$TIMES"
}
EOF
say "checks ($((SECONDS - START)) s so far)"
cd "$REPO"
python3 "$REPO/tests/gatk/compare.py" "$OUT/checks.json"
