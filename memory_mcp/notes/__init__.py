"""File notes: markdown and text files in the memory folders, kept in the store as memories.

chunking (text → chunks) · paths (which files are notes, read safely) · indexer (a file or a
folder → FileIndexService) · watcher (filesystem events → indexer)."""
