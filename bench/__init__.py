"""Benchmarks, run from a clone (not part of the installed package): `memory-mcp bench
locomo|latency|startup|stress`, `python -m bench ...` or `make bench`; see bench/README.md."""
