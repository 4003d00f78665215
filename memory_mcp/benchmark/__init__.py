"""Benchmarks that drive the real service path: retrieval quality on LoCoMo and search
latency on large synthetic stores. Run them with `memory-mcp bench ...`; see bench/README.md."""
