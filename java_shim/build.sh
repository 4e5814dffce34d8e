#!/usr/bin/env bash
# Builds java_shim/build/warpdp-gatk.jar (the GATK drop-in and JVM client) with javac against Debian's jars.
#   bash java_shim/build.sh         build the jar
#   bash java_shim/build.sh test    build, then run the JUnit tests against a real `warpdp serve`
# Installs the Debian packages it needs when missing (apt-get; root or sudo). Exits non-zero on any failure.
# WARPDP_SERVE overrides the server command of the tests (default: python3 -m warpdp serve).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=$HERE/build
JAVA=/usr/share/java
PROTO=$REPO/warpdp/grpc/warpdp.proto
DATA=$REPO/../shared/data/pairhmm
SERVE=${WARPDP_SERVE:-python3 -m warpdp serve}

MODE=${1:-build}
case $MODE in build|test) ;; *) echo "usage: $0 [test]" >&2; exit 2 ;; esac

say() { printf '[java_shim] %s\n' "$*"; }
die() { printf '[java_shim] error: %s\n' "$*" >&2; exit 1; }

PACKAGES=(libgatk-native-bindings-java libgrpc-java libprotobuf-java protobuf-compiler
          protobuf-compiler-grpc-java-plugin libnetty-java libperfmark-java libguava-java
          libgeronimo-annotation-1.3-spec-java liberror-prone-java libjsr305-java junit4 openjdk-17-jdk-headless)
# Tests only: Intel GKL itself, to compare with and to shadow as GATK's jar would; openssl for a TLS certificate.
TEST_PACKAGES=(libgkl-java libgkl-jni libcommons-logging-java openssl)

install_missing() {
    local missing=() p have_jdk=
    # A JDK 17 or later installed some other way will do.
    if command -v javac >/dev/null && [[ $(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/') -ge 17 ]]; then
        have_jdk=1
    fi
    local wanted=("${PACKAGES[@]}")
    [[ $MODE == test ]] && wanted+=("${TEST_PACKAGES[@]}")
    for p in "${wanted[@]}"; do
        [[ $p == openjdk-17-jdk-headless && -n $have_jdk ]] && continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    say "installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

jars() { local n; for n; do [[ -f $JAVA/$n.jar ]] || die "missing $JAVA/$n.jar"; printf '%s:' "$JAVA/$n.jar"; done; }

# The libraries the gRPC client needs at run time; they go, unpacked, into the jar's private area.
RUNTIME=(grpc-api grpc-context grpc-core grpc-netty grpc-protobuf grpc-protobuf-lite grpc-stub protobuf guava
         perfmark-api netty-common netty-buffer netty-transport netty-resolver netty-codec netty-codec-http
         netty-codec-http2 netty-handler netty-codec-socks netty-handler-proxy)
PRIVATE=WARPDP-DEPS   # must match org.warpdp.client.spi.IsolatedLoader.PREFIX

build_jar() {
    local start=$SECONDS gatk compile_cp version
    gatk=$(jars gatk-native-bindings)
    # Annotation jars only for compiling (javac looks at the annotations of gRPC's classes).
    compile_cp=$(jars "${RUNTIME[@]}" geronimo-annotation-1.3-spec error_prone_annotations jsr305)
    [[ -f $PROTO ]] || die "no $PROTO"
    version=$(sed -nE 's/^version *= *"([^"]+)".*/\1/p' "$REPO/pyproject.toml" | head -1)
    rm -rf "$BUILD/gen" "$BUILD/classes" "$BUILD/warpdp-gatk.jar"
    mkdir -p "$BUILD/gen" "$BUILD/classes/main" "$BUILD/classes/grpc"

    say "generating stubs from $(realpath --relative-to="$REPO" "$PROTO")"
    protoc --plugin=protoc-gen-grpc-java=/usr/bin/grpc_java_plugin \
        --java_out="$BUILD/gen" --grpc-java_out="$BUILD/gen" \
        -I "$(dirname "$PROTO")" -I "$HERE/src/grpc/proto" "$(basename "$PROTO")" health.proto

    say "compiling"
    # The public classes see no gRPC: only the GATK interfaces (which GATK provides at run time).
    find "$HERE/src/main/java" -name '*.java' > "$BUILD/main.list"
    javac --release 17 -proc:none -Xlint:all,-path -Werror -encoding UTF-8 -d "$BUILD/classes/main" -cp "$gatk" @"$BUILD/main.list"
    # Generated stubs as they come (protoc's code has warnings); our gRPC side without any.
    find "$BUILD/gen" -name '*.java' > "$BUILD/gen.list"
    javac --release 17 -proc:none -nowarn -encoding UTF-8 -d "$BUILD/classes/grpc" -cp "$compile_cp" @"$BUILD/gen.list"
    find "$HERE/src/grpc/java" -name '*.java' > "$BUILD/grpc.list"
    javac --release 17 -proc:none -Xlint:all,-path -Werror -encoding UTF-8 -d "$BUILD/classes/grpc" \
        -cp "$BUILD/classes/main:$BUILD/classes/grpc:$compile_cp" @"$BUILD/grpc.list"

    say "assembling build/warpdp-gatk.jar"
    # One pass over the runtime jars straight into the new jar: our public classes at the top, the private
    # classes (gRPC and friends, our transport, the stubs) under $PRIVATE/ for IsolatedLoader.
    python3 - "$BUILD/warpdp-gatk.jar" "${version:-dev}" "$BUILD/classes/main" "$BUILD/classes/grpc" "$PRIVATE/" \
        "${RUNTIME[@]/#/$JAVA/}" <<'PY'
import os, sys, zipfile

out, version, public_dir, private_dir, prefix, *jars = sys.argv[1:]
jars = [j + ".jar" for j in jars]
manifest = ("Manifest-Version: 1.0\nMain-Class: org.warpdp.client.Main\nImplementation-Title: warpdp-gatk\n"
            f"Implementation-Version: {version}\nImplementation-Vendor: warpdp\n\n")
# Files several jars share are concatenated: gRPC's service registrations, netty's version list.
merged = lambda n: n.startswith("META-INF/services/") or n == "META-INF/io.netty.versions.properties"
skipped = lambda n: (n.endswith("/") or n in ("META-INF/MANIFEST.MF", "module-info.class")
                     or n.startswith("META-INF/versions/") or n.endswith((".SF", ".RSA", ".DSA")))
seen, concat = set(), {}
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("META-INF/MANIFEST.MF", manifest)
    for root, into in ((public_dir, ""), (private_dir, prefix)):
        for d, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                path = os.path.join(d, f)
                name = into + os.path.relpath(path, root).replace(os.sep, "/")
                seen.add(name)
                z.write(path, name)
    for jar in jars:
        with zipfile.ZipFile(jar) as src:
            for info in src.infolist():
                n = info.filename
                if skipped(n):
                    continue
                if n.startswith("org/broadinstitute/"):
                    sys.exit(f"{jar} holds GATK classes ({n}); they must not go into the jar")
                if merged(n):
                    concat[n] = concat.get(n, b"") + src.read(info).rstrip(b"\n") + b"\n"
                elif prefix + n not in seen:  # the first copy wins
                    seen.add(prefix + n)
                    z.writestr(prefix + n, src.read(info))
    for n, data in sorted(concat.items()):
        z.writestr(prefix + n, data)
PY
    # Smoke test of the packaging: the private gRPC classes load and a call fails cleanly (no server needed).
    java -cp "$BUILD/warpdp-gatk.jar" org.warpdp.client.Main selftest >/dev/null ||
        die "the jar does not work: java -cp build/warpdp-gatk.jar org.warpdp.client.Main selftest"
    say "built $(realpath --relative-to="$REPO" "$BUILD/warpdp-gatk.jar") ($(du -h "$BUILD/warpdp-gatk.jar" | cut -f1)," \
        "$((SECONDS - start)) s)"
}

SERVER_PID=
TESTS_PID=
stop_server() {
    [[ -z $TESTS_PID ]] || kill -TERM "$TESTS_PID" 2>/dev/null || true
    [[ -n $SERVER_PID ]] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        local i
        for i in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}

run_tests() {
    local start=$SECONDS test_cp port log=$BUILD/test-server.log
    test_cp="$BUILD/warpdp-gatk.jar:$(jars gatk-native-bindings junit4 hamcrest-core)"
    # GKL's jar after ours, as in GATK's: our classes must win (DropInTest; skipped without GKL).
    [[ -f $JAVA/gkl.jar && -f $JAVA/commons-logging.jar ]] && test_cp+="$JAVA/gkl.jar:$JAVA/commons-logging.jar"
    rm -rf "$BUILD/test-classes" && mkdir -p "$BUILD/test-classes"
    find "$HERE/src/test/java" -name '*.java' > "$BUILD/test.list"
    javac --release 17 -proc:none -Xlint:all,-path -Werror -encoding UTF-8 -d "$BUILD/test-classes" -cp "$test_cp" @"$BUILD/test.list"

    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    say "starting the test server: $SERVE --host 127.0.0.1 --port $port --backend cpu"
    trap stop_server EXIT
    trap 'exit 130' INT TERM  # so the EXIT trap stops the server on Ctrl-C / kill too
    (cd "$REPO" && exec $SERVE --host 127.0.0.1 --port "$port" --backend cpu) > "$log" 2>&1 &
    SERVER_PID=$!
    if ! java -cp "$BUILD/warpdp-gatk.jar" org.warpdp.client.Main health --address "127.0.0.1:$port" --wait 120 \
            --pid "$SERVER_PID" >/dev/null; then
        cat "$log" >&2
        die "the test server did not become healthy"
    fi
    [[ -d $DATA ]] || say "WARNING: reference data $DATA not found; the reference tests will be skipped"

    local rc=0
    # In the background so that a TERM to this script is handled at once (bash defers traps while a
    # foreground command runs).
    java -Dwarpdp.address="127.0.0.1:$port" -Dwarpdp.test.data="$DATA" -Dwarpdp.test.repo="$REPO" \
        -Dwarpdp.test.serve="$SERVE" -cp "$BUILD/test-classes:$test_cp" org.warpdp.test.RunTests &
    TESTS_PID=$!
    wait "$TESTS_PID" || rc=$?
    TESTS_PID=
    stop_server
    trap - EXIT INT TERM
    if [[ $rc -ne 0 ]]; then
        say "last lines of the server log ($(realpath --relative-to="$REPO" "$log")):"
        tail -n 30 "$log" >&2
        die "Java tests failed"
    fi
    say "Java tests passed ($((SECONDS - start)) s)"
}

install_missing
build_jar
if [[ $MODE == test ]]; then
    run_tests
fi
