"""The GPU runtime every kernel family's launcher shares.

* :mod:`.module_cache`: a family's CUDA source compiled once per device and option set, and its
  launch structs' sizes checked against the dtypes that fill them;
* :mod:`.launch_params`: launch structs as numpy structured dtypes (C layout), filled by name;
* :mod:`.layout`: the sections of a chunk's packed buffers;
* :mod:`.occupancy`: blocks of a kernel resident on the device;
* :mod:`.device`: the current device over CuPy, its calls recorded and made in one go;
* :mod:`.runner`: per-device runners, the chunk loop (slots, cancel checks) and streams;
* :mod:`.slots`: pinned host and device buffers of the chunks in flight;
* ``cuda_calls`` (Cython): asynchronous CUDA calls made in one go without the interpreter lock;
* ``ordering`` (Cython): a counting sort the planners use.

Importing this package needs no GPU and no CuPy.
"""
