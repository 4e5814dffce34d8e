# The two commands of the README: `make run` (set up, then start the server) and `make test`.
PYTHON ?= python3
PIP_FLAGS ?= --quiet --disable-pip-version-check --root-user-action=ignore
MVN ?= mvn
# Batch mode, no download progress; ~/.m2 caches Maven Central's artifacts between runs.
MVN_FLAGS ?= -B -ntp

.PHONY: install run test test-python test-java test-gatk test-cpp java-jar bench-cpu check-cuda

# Installs warpdp (building the Cython/C CPU backend in place) with its test dependencies.
install:
	$(PYTHON) -m pip install $(PIP_FLAGS) -e ".[dev]"

run: install
	$(PYTHON) -m warpdp serve

# The whole suite: Python (GPU tests skip without a GPU), then the Java shim's JUnit tests (Maven Surefire,
# against a real CPU `warpdp serve` the tests start). Both always run; the target fails if either does.
test: install
	@status=0; \
	$(PYTHON) -m pytest -q || status=1; \
	$(MVN) $(MVN_FLAGS) -f java_shim/pom.xml verify || status=1; \
	exit $$status

test-python: install
	$(PYTHON) -m pytest -q

# Builds java_shim/target/warpdp-gatk.jar and runs its tests against it.
test-java: install
	$(MVN) $(MVN_FLAGS) -f java_shim/pom.xml verify

# The C/C++ front door (clients/cpp): libwarpdp, warpdp_logan, the example overlapper and their
# ctest suite, built with AddressSanitizer + UBSan. The tests compare against the Python API of
# this checkout, so its CPU extensions must be built in place first (`make install`).
CPP_BUILD ?= build/cpp
test-cpp:
	cmake -S clients/cpp -B $(CPP_BUILD) -DWARPDP_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(CPP_BUILD) -j2
	cd $(CPP_BUILD) && ctest --output-on-failure

java-jar:
	$(MVN) $(MVN_FLAGS) -q -f java_shim/pom.xml -DskipTests package

# GATK 4.6.2.0 itself (from Maven Central) on a synthetic data set: HaplotypeCaller with GKL's AVX
# Pair-HMM, with warpdp (through the `gatk`-style launcher jar) and with GATK's Java Pair-HMM; see docs/gatk.md.
test-gatk: install java-jar
	bash tests/gatk/run.sh

bench-cpu: install
	$(PYTHON) benchmarks/pairhmm_cpu.py

check-cuda:
	bash scripts/check_cuda_sources.sh
