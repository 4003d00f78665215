"""memory-mcp: a durable, searchable memory for AI agents, served over MCP."""

import os

# OpenBLAS's worker threads spin for a while after each product, and a search's vector scan
# is one product: on 2 cores they took the CPU the query embedding and the database thread
# needed (a search used 40 ms of CPU for 22 ms of wall time). Read when numpy loads, so set
# before anything imports it; the scan splits itself over threads instead
# (semantic/vector_index.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
