"""GPU backend: CUDA C sources compiled at run time through CuPy (NVRTC), one module per algorithm;
each module's launcher plans its chunks and launches its kernels, and ``runtime`` is what they
share (module cache, launch structs, slots, the chunk loop, occupancy, CUDA calls).

Importing this package needs no GPU and no CuPy; each algorithm module imports CuPy only when it runs.
"""
