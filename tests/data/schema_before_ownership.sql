-- The schema of a store made by memory-mcp on 2026-11-23 (main 1961ba8), before the
-- updated_by and about_agent columns: tests/test_store_migration.py opens it with today's code.

CREATE TABLE memories (
	id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, 
	identity TEXT NOT NULL, 
	"key" TEXT NOT NULL, 
	value TEXT NOT NULL, 
	scope VARCHAR(16) NOT NULL, 
	agent_id VARCHAR(128) NOT NULL, 
	session_id VARCHAR(128) NOT NULL, 
	source VARCHAR(32) NOT NULL, 
	tags TEXT NOT NULL, 
	metadata TEXT NOT NULL, 
	flags TEXT NOT NULL, 
	confidence FLOAT, 
	pinned BOOLEAN NOT NULL, 
	version INTEGER NOT NULL, 
	content_hash VARCHAR(64) NOT NULL, 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	expires_at FLOAT, 
	last_accessed_at FLOAT, 
	last_used_at FLOAT NOT NULL, 
	access_count INTEGER NOT NULL, 
	file_path TEXT, 
	revision INTEGER NOT NULL, 
	UNIQUE (identity)
);

CREATE INDEX ix_memories_expires_at ON memories (expires_at);

CREATE INDEX ix_memories_scope ON memories (scope, agent_id, session_id);

CREATE INDEX ix_memories_owner_lru ON memories (agent_id, pinned, last_used_at);

CREATE INDEX ix_memories_content_hash ON memories (content_hash);

CREATE INDEX ix_memories_file_path ON memories (file_path);

CREATE INDEX ix_memories_revision ON memories (revision);

CREATE TABLE embeddings (
	content_hash VARCHAR(64) NOT NULL, 
	model VARCHAR(128) NOT NULL, 
	dimension INTEGER NOT NULL, 
	vector BLOB NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (content_hash, model)
);

CREATE TABLE memory_tombstones (
	memory_id INTEGER NOT NULL, 
	revision INTEGER NOT NULL, 
	PRIMARY KEY (memory_id)
);

CREATE INDEX ix_memory_tombstones_revision ON memory_tombstones (revision);

CREATE TABLE store_meta (
	name VARCHAR(64) NOT NULL, 
	value INTEGER NOT NULL, 
	PRIMARY KEY (name)
);

CREATE TABLE memory_tags (
	memory_id INTEGER NOT NULL, 
	tag VARCHAR(64) NOT NULL, 
	PRIMARY KEY (memory_id, tag), 
	FOREIGN KEY(memory_id) REFERENCES memories (id) ON DELETE CASCADE
);

CREATE INDEX ix_memory_tags_tag ON memory_tags (tag);

CREATE TABLE memory_history (
	id INTEGER NOT NULL, 
	memory_id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	value TEXT NOT NULL, 
	tags TEXT NOT NULL, 
	metadata TEXT NOT NULL, 
	source VARCHAR(32) NOT NULL, 
	replaced_at FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(memory_id) REFERENCES memories (id) ON DELETE CASCADE
);

CREATE INDEX ix_memory_history_memory_id ON memory_history (memory_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
        key, value, tags, content='memories', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, key, value, tags)
        VALUES (new.id, new.key, new.value, new.tags);
    END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags)
        VALUES ('delete', old.id, old.key, old.value, old.tags);
    END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF key, value, tags
    ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags)
        VALUES ('delete', old.id, old.key, old.value, old.tags);
        INSERT INTO memories_fts(rowid, key, value, tags)
        VALUES (new.id, new.key, new.value, new.tags);
    END;
