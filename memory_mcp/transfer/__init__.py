"""Import and export formats: our JSONL, batches of an import, other servers' files."""
