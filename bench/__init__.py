"""The lab: the benchmarks, a project of their own beside the product (bench/pyproject.toml),
never in its wheel. From a clone: `python -m bench locomo|latency|startup|stress|...`,
`make bench-NAME ARGS=...` or `make bench`; see bench/README.md."""
