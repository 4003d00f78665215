"""Retrieval research on the LoCoMo development split (issue 23): a replica of the search
path on cached vectors and FTS5 hits, the experiments, and leave-one-conversation-out."""
