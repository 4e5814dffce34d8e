# The two commands of the README: `make run` (set up, then start the server) and `make test`.
#
# Everything is installed into a virtual environment of the project, .venv (so a stock Debian
# Python, which refuses `pip install` outside one under PEP 668, works as it is). Set-up is done
# in steps that each run only when their inputs changed, and say what they do:
#   .venv/bin/python   the environment (python3 -m venv)
#   .venv/.deps        warpdp (editable) with its test dependencies, when pyproject.toml changed
#   .venv/.built       the CPU extensions rebuilt in place, when a C/Cython source changed, and the
#                      GPU kernels' fatbins (where nvcc is found), when a kernel or launcher changed
BASE_PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP_FLAGS ?= --disable-pip-version-check --progress-bar off
MVN ?= mvn
# Batch mode, no download progress; ~/.m2 caches Maven Central's artifacts between runs.
MVN_FLAGS ?= -B -ntp
# pytest: -rs lists every skipped test with its reason.
PYTEST_FLAGS ?= -q -rs
# Commands run with the environment's python3 first on PATH: the Java tests and the GATK run
# start `python3 -m warpdp serve` themselves.
IN_VENV := PATH="$(abspath $(VENV))/bin:$$PATH"

CPU_SOURCES := $(wildcard warpdp/cython_cpu/*.pyx warpdp/cython_cpu/*.pxd warpdp/cython_cpu/*.pxi \
                 warpdp/cython_cpu/*.c warpdp/cython_cpu/*.h warpdp/kernels/runtime/*.pyx)
# Cython's generated .c files are outputs, not sources.
CPU_SOURCES := $(filter-out $(patsubst %.pyx,%.c,$(filter %.pyx,$(CPU_SOURCES))),$(CPU_SOURCES))
# The fatbins' inputs: the kernels, and the launchers that list the kernels to instantiate.
GPU_SOURCES := $(wildcard warpdp/kernels/*.cu warpdp/kernels/*.py) warpdp/kernels/runtime/fatbin_build.py

.PHONY: install run test test-python test-java test-gatk test-cpp java-jar bench-cpu check-cuda clean-venv

install: $(VENV)/.built

$(PY):
	@echo "make: creating the virtual environment $(VENV) ($(BASE_PYTHON) -m venv)"
	@$(BASE_PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "make: '$(BASE_PYTHON) -m venv' failed; on Debian/Ubuntu: apt install python3-venv" >&2; exit 1; }

$(VENV)/.deps: pyproject.toml | $(PY)
	@echo "make: installing warpdp and its test dependencies into $(VENV) (pyproject.toml changed or first run;"
	@echo "      the first run downloads the dependencies and compiles the CPU extensions: a few minutes)"
	$(PY) -m pip install $(PIP_FLAGS) --upgrade pip setuptools wheel "Cython>=3.0" "numpy>=1.24"
	$(PY) -m pip install $(PIP_FLAGS) --no-build-isolation -e ".[dev]"
	@touch $@

$(VENV)/.built: $(VENV)/.deps setup.py $(CPU_SOURCES) $(GPU_SOURCES)
	@echo "make: building the CPU extensions and the GPU fatbins in place (a source changed)"
	$(PY) setup.py -q build_ext --inplace
	@touch $@

run: install
	@echo "make: starting the server ($(PY) -m warpdp serve; Ctrl-C stops it)"
	$(PY) -m warpdp serve

# Every suite, each run whatever the others did; the failed ones are listed at the end and the
# target then fails: the Python tests (GPU tests skip without a GPU), the Java shim's JUnit
# tests (Maven Surefire, against a real CPU `warpdp serve` the tests start), and the C/C++
# client's ctest suite (test-cpp below).
# (GATK itself on a data set is `make test-gatk`: minutes, and GATK from Maven Central.)
test: install
	@failed=""; \
	echo "make: Python tests (pytest)"; \
	$(PY) -m pytest $(PYTEST_FLAGS) || failed="$$failed python"; \
	echo "make: Java tests (Maven)"; \
	$(IN_VENV) $(MVN) $(MVN_FLAGS) -f java_shim/pom.xml verify || failed="$$failed java"; \
	echo "make: C/C++ tests (ctest, AddressSanitizer + UBSan)"; \
	$(MAKE) --no-print-directory test-cpp || failed="$$failed c/c++"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED suites:$$failed" >&2; exit 1; fi; \
	echo "make test: every suite passed"

test-python: install
	$(PY) -m pytest $(PYTEST_FLAGS)

# Builds java_shim/target/warpdp-gatk.jar and runs its tests against it.
test-java: install
	$(IN_VENV) $(MVN) $(MVN_FLAGS) -f java_shim/pom.xml verify

# The C/C++ front door (clients/cpp): libwarpdp, warpdp_logan, the example overlapper and their
# ctest suite, built with AddressSanitizer + UBSan. The tests compare against the Python API of
# this checkout (its CPU extensions built in place by `make install`), run by the environment's python.
# Its GPU handles are built where nvcc is found (the one the fatbins use: on PATH, or PyPI's
# nvidia-cuda-nvcc), for sm_90 only in this test build (CPP_CUDA_ARCHITECTURES); the GPU tests
# skip where no GPU is usable.
CPP_BUILD ?= build/cpp
CPP_CUDA_ARCHITECTURES ?= 90-real
CUDA_COMPILER = $(shell $(PY) -c 'from warpdp.kernels.runtime.fatbin_build import find_nvcc; n = find_nvcc(); print(n[0] if n else "")' 2>/dev/null)
test-cpp: install
	cmake -S clients/cpp -B $(CPP_BUILD) -DWARPDP_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) -DWARPDP_CUDA_ARCHITECTURES="$(CPP_CUDA_ARCHITECTURES)" \
	  $(if $(CUDA_COMPILER),-DCMAKE_CUDA_COMPILER=$(shell command -v $(CUDA_COMPILER)))
	cmake --build $(CPP_BUILD) -j2
	cd $(CPP_BUILD) && ctest --output-on-failure

java-jar:
	$(MVN) $(MVN_FLAGS) -q -f java_shim/pom.xml -DskipTests package

# GATK 4.6.2.0 itself (from Maven Central) on a synthetic data set: HaplotypeCaller with GKL's AVX
# Pair-HMM, with warpdp (through the `gatk`-style launcher jar) and with GATK's Java Pair-HMM; see docs/gatk.md.
test-gatk: install java-jar
	$(IN_VENV) bash tests/gatk/run.sh

bench-cpu: install
	$(PY) benchmarks/pairhmm_cpu.py

check-cuda:
	bash scripts/check_cuda_sources.sh

clean-venv:
	rm -rf $(VENV)
