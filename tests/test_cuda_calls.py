"""warpdp.kernels.runtime.cuda_calls: asynchronous CUDA calls recorded, then made in one go."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from warpdp.kernels.runtime.cuda_calls import CallList
from warpdp.plugin.backend import gpu_status


def _driver_loads() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_calls_are_counted_and_a_launch_takes_at_most_three_arguments():
    calls = CallList()
    calls.to_device(4096, 8192, 16, 0)
    calls.to_host(8192, 4096, 16, 0)
    calls.launch(1, 2, 32, 0, 0, (1, 2, -3))
    calls.record(5, 0)
    calls.wait(0, 5)
    assert len(calls) == 5
    with pytest.raises(ValueError, match="at most 3 kernel arguments, not 4"):
        calls.launch(1, 2, 32, 0, 0, (1, 2, 3, 4))
    assert len(calls) == 5  # the refused launch was not recorded
    calls.clear()
    assert len(calls) == 0
    calls.issue(0)  # nothing recorded: nothing to make, no driver needed


@pytest.mark.skipif(_driver_loads(), reason="this machine has a CUDA driver, so its absence cannot be shown")
def test_without_a_driver_issue_says_so_and_forgets_the_calls():
    calls = CallList()
    calls.to_device(4096, 8192, 16, 0)
    with pytest.raises(RuntimeError, match=r"cannot load the CUDA driver \(libcuda\.so\.1\)"):
        calls.issue(0)
    assert len(calls) == 0


_GPU_OK, _GPU_WHY = gpu_status("pairhmm")


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=f"no usable GPU: {_GPU_WHY}")
def test_copies_and_an_event_go_through_the_driver_in_order():
    import cupy

    from warpdp.kernels.runtime.slots import cupy_pinned

    n = 1 << 20
    _keep_in, source = cupy_pinned(cupy, n)
    _keep_out, back = cupy_pinned(cupy, n)
    source[:] = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8)
    back[:] = 0
    device = cupy.zeros(n, dtype=cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    done = cupy.cuda.Event(disable_timing=True)
    calls = CallList()
    calls.to_device(device.data.ptr, source.ctypes.data, n, stream.ptr)
    calls.to_host(back.ctypes.data, device.data.ptr, n, stream.ptr)
    calls.record(done.ptr, stream.ptr)
    calls.issue(cupy.cuda.driver.ctxGetCurrent())
    assert len(calls) == 0
    done.synchronize()
    np.testing.assert_array_equal(back, source)
    np.testing.assert_array_equal(cupy.asnumpy(device), source)
