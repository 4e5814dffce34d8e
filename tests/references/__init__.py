"""Independent reference implementations the tests compare warpdp against (plain Python/NumPy,
written from the published algorithms, never from warpdp's kernels)."""
