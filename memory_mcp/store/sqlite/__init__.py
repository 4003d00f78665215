"""SQLite's own parts of the store, as store/postgres/ holds PostgreSQL's: the file and its
write lock, FTS5's keyword index, the reads on the standard library's sqlite3. Imports
nothing: a hook reading a record loads only the modules it names."""
