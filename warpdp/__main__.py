"""`python -m warpdp` is the `warpdp` command."""
import sys

from .cli import main

sys.exit(main())
