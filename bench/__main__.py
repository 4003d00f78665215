"""`python -m bench locomo|latency|startup|stress ...` from the repository's root."""

import sys

from bench.command import main

sys.exit(main())
