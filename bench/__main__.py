"""`python -m bench locomo|latency|startup|stress ...` from the repository's root (what
`make bench-NAME` runs)."""

import logging
import sys

from bench.command import main

logging.basicConfig(  # as the CLI logs: INFO to stderr
    stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
)
logging.getLogger("torch").setLevel(logging.WARNING)  # its exit-time cache statistics
sys.exit(main())
