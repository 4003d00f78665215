"""PostgreSQL specifics: the tsvector keyword arm, pgvector vectors and their DDL. The
store picks them by dialect in one place (MemoryStore.__init__)."""
