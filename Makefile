# The two commands of the README: `make run` (set up, then start the server) and `make test`.
PYTHON ?= python3
PIP_FLAGS ?= --quiet --disable-pip-version-check --root-user-action=ignore

.PHONY: install run test test-python test-java bench-cpu check-cuda

# Installs warpdp (building the Cython/C CPU backend in place) with its test dependencies.
install:
	$(PYTHON) -m pip install $(PIP_FLAGS) -e ".[dev]"

run: install
	$(PYTHON) -m warpdp serve

# The whole suite: Python (GPU tests skip without a GPU), then the Java shim's JUnit tests
# against a real `warpdp serve` (java_shim/build.sh installs its Debian packages when missing).
test: test-python test-java

test-python: install
	$(PYTHON) -m pytest -q

test-java: install
	bash java_shim/build.sh test

bench-cpu: install
	$(PYTHON) benchmarks/pairhmm_cpu.py

check-cuda:
	bash scripts/check_cuda_sources.sh
