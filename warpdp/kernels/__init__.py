"""GPU backend: CUDA C sources, one module per algorithm, compiled ahead of time into the fatbins
shipped in ``fatbin/`` (built by setup.py where nvcc is found) or else at run time through CuPy
(NVRTC; see runtime/prebuilt.py for when a fatbin is used); each module's launcher plans its chunks and launches its kernels, and ``runtime`` is what they
share (module cache, launch structs, slots, the chunk loop, occupancy, CUDA calls).

Importing this package needs no GPU and no CuPy; each algorithm module imports CuPy only when it runs.
"""
