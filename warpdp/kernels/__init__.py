"""GPU backend: CUDA C sources compiled at run time through CuPy (NVRTC), one module per algorithm.

Importing this package needs no GPU and no CuPy; each algorithm module imports CuPy only when it runs.
"""
