"""What several test modules share (inputs, servers, reference data paths). Test modules import
from here, never from each other; tests/conftest.py puts tests/ on sys.path."""
