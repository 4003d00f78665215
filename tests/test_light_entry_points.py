"""The entry points that must answer at once load nothing heavy. `memory-mcp --version` and
a Claude Code hook with nothing to do (a file written outside the memory folders) load
neither the store, the model nor the MCP SDK (nor pydantic, numpy or SQLAlchemy under
them). The SessionStart hook, `memory-mcp context` and `memory-mcp get` read a SQLite store
on the standard library (app/reads.py): besides the configuration (pydantic) they load
none of SQLAlchemy, the ORM store, the service, the model, OAuth, the web view, the SDK,
asyncio, or rich's tables (a memory printed to a pipe).
Each runs as the real process a user or Claude Code starts, with Python's import log
(PYTHONPROFILEIMPORTTIME) read back. A store an older memory-mcp made is read through the
app instead, which migrates it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio

from memory_mcp.models import StoreRequest
from memory_mcp.rules.memories_block import memories_block
from memory_mcp.rules.projects import current_project
from tests.conftest import UNSTAMP, FakeEmbedder, opened
from tests.hooks.test_hooks import hook_env, post_tool_use, run_hook, settings_for
from tests.mcp.test_stdio_e2e import EXE

HEAVY = (
    "memory_mcp.store",
    "memory_mcp.app.root",
    "memory_mcp.rules.service",
    "memory_mcp.semantic",
    "memory_mcp.mcp",
    "mcp",
    "pydantic",
    "sqlalchemy",
    "aiosqlite",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "torch",
    "sentence_transformers",
    "anyio",  # no event loop either
)


# What a command that reads a row or prints the <memories> block must not load: the
# configuration (pydantic) is all it shares with the app.
READING_HEAVY = (
    "memory_mcp.app.root",
    "memory_mcp.rules.service",
    "memory_mcp.store.repository",
    "memory_mcp.store.engine",
    "memory_mcp.store.schema",
    "memory_mcp.store.memories_table",
    "memory_mcp.semantic.embeddings",  # (semantic/similar_check.py is a result's plain data)
    "memory_mcp.semantic.vectors",
    "memory_mcp.semantic.onnx_embedder",
    "memory_mcp.search.pipeline",
    "memory_mcp.auth",
    "memory_mcp.web",
    "memory_mcp.http",
    "memory_mcp.mcp",
    "memory_mcp.notes.watcher",
    "mcp",
    "sqlalchemy",
    "aiosqlite",
    "asyncpg",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "torch",
    "starlette",
    "uvicorn",
    "httpx",
    # A memory printed to a pipe needs no table library (cli/tables.py, piped_memory).
    "rich.console",
    "rich.table",
    # The configuration is pydantic alone (settings.py): pydantic-settings loaded asyncio.
    "pydantic_settings",
    "asyncio",
    "anyio",  # no event loop to run either (cli/token_commands.py imports it lazily)
)


def imported(import_log: str) -> set[str]:
    """The modules named in `-X importtime` lines: 'import time: self | cumulative | name'."""
    names = set()
    for line in import_log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def heavy(names: set[str], which: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in which))


def test_version_imports_no_store_model_or_sdk() -> None:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([EXE, "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("memory-mcp ")
    names = imported(done.stderr)
    assert "memory_mcp.cli.main" in names  # the log is read, not empty
    assert heavy(names) == []


def test_a_hook_with_nothing_to_do_imports_no_store_model_or_sdk(tmp_path: Path) -> None:
    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    (tmp_path / "memory").mkdir()
    outside = tmp_path / "app.py"
    outside.write_text("print('hello')")
    done, _elapsed = run_hook("post-tool-use", post_tool_use(outside), env)
    assert done.returncode == 0 and done.stdout == ""
    names = imported(done.stderr)
    assert "memory_mcp.hooks.runner" in names
    assert heavy(names) == []


def seed(tmp_path: Path) -> dict[str, int]:
    """A store with a few memories of the hooks' agent: key -> id."""
    settings = settings_for(tmp_path)
    ids: dict[str, int] = {}

    async def write() -> None:
        async with opened(settings, FakeEmbedder()) as app:
            for key, value in (("deploy", "Deploys use blue-green"), ("cat", "The cat is Miso")):
                outcome = await app.service.store_memory(app.caller, StoreRequest(key, value))
                ids[key] = outcome.record.id

    anyio.run(write)
    return ids


def reading(
    command: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        timeout=60,
    )
    return done, imported(done.stderr)


def test_session_start_reads_the_block_without_the_app(tmp_path: Path) -> None:
    seed(tmp_path)
    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    done, _elapsed = run_hook("session-start", {"session_id": "s", "cwd": str(tmp_path)}, env)
    assert done.returncode == 0
    keys = [item.attrib["key"] for item in ET.fromstring(done.stdout).findall("memory")]
    assert sorted(keys) == ["cat", "deploy"]
    names = imported(done.stderr)
    assert "memory_mcp.app.reads" in names  # the log is read, and it took the light road
    # The hook runs no event loop on this road either (hooks/job.py imports anyio lazily).
    assert heavy(names, READING_HEAVY) == []


def test_context_and_get_read_without_the_app(tmp_path: Path) -> None:
    ids = seed(tmp_path)
    env = hook_env(tmp_path)
    context, names = reading([EXE, "context"], env)
    assert context.returncode == 0 and "Deploys use blue-green" in context.stdout
    assert "memory_mcp.app.reads" in names
    assert heavy(names, READING_HEAVY) == []
    for count in (1, 2):  # each read counted, and written by this process
        got, names = reading([EXE, "get", str(ids["cat"]), "--json"], env)
        assert got.returncode == 0, got.stderr
        shown = json.loads(got.stdout)
        assert (shown["key"], shown["value"], shown["access_count"]) == (
            "cat",
            "The cat is Miso",
            count,
        )
        assert heavy(names, READING_HEAVY) == []
    shown, names = reading([EXE, "get", str(ids["cat"])], env)  # a person's view, piped
    assert shown.returncode == 0 and "The cat is Miso" in shown.stdout
    assert heavy(names, READING_HEAVY) == []
    missing, _ = reading([EXE, "get", str(ids["cat"]), "--agent-id", "someone-else"], env)
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_an_older_store_is_read_through_the_app_which_migrates_it(tmp_path: Path) -> None:
    """A store without a column the reads need (an older memory-mcp's): the light reads
    decline it, and the app opens it (migrating it) and answers the same."""
    ids = seed(tmp_path)
    db = tmp_path / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE memories DROP COLUMN about_agent")
        conn.execute(UNSTAMP)
    env = hook_env(tmp_path)
    got, names = reading([EXE, "get", str(ids["deploy"]), "--json"], env)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["value"] == "Deploys use blue-green"
    assert "memory_mcp.app.root" in names  # the app's road
    with sqlite3.connect(db) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    assert "about_agent" in columns  # migrated by that open
    again, names = reading([EXE, "get", str(ids["deploy"]), "--json"], env)
    assert again.returncode == 0 and heavy(names, READING_HEAVY) == []


# What a hook that writes (a note indexed, a session summary stored) must not load: it
# opens the store (SQLAlchemy) and the service, and nothing of the servers.
WRITING_HEAVY = (
    "memory_mcp.auth",
    "memory_mcp.store.oauth_rows",
    "memory_mcp.store.token_rows",
    "memory_mcp.store.postgres",
    "memory_mcp.notes.watcher",
    "memory_mcp.web",
    "memory_mcp.http",
    "memory_mcp.mcp",
    "mcp",
    "watchfiles",
    "asyncpg",
    "onnxruntime",
    "tokenizers",
    "torch",
    "starlette",
    "uvicorn",
    "httpx",
)


def test_the_writing_hooks_load_no_server_part(tmp_path: Path) -> None:
    seed(tmp_path)
    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    note = tmp_path / "memory" / "deploys.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# Deploys\n\nWe deploy on Fridays from the release branch.\n")
    indexed, _ = run_hook("post-tool-use", post_tool_use(note), env)
    assert indexed.returncode == 0
    names = imported(indexed.stderr)
    assert "memory_mcp.app.root" in names  # it wrote through the app
    assert heavy(names, WRITING_HEAVY) == []
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "Fix the deploy"}})
        + "\n"
    )
    ended, _ = run_hook("session-end", {"session_id": "s", "transcript_path": str(transcript)}, env)
    assert ended.returncode == 0
    assert "memory-mcp hook" not in ended.stderr  # no error line
    assert heavy(imported(ended.stderr), WRITING_HEAVY) == []
    with sqlite3.connect(tmp_path / "memory.db") as conn:
        keys = {row[0] for row in conn.execute("SELECT key FROM memories")}
    assert "session-summary:s" in keys and any(key.startswith("file:") for key in keys)


def test_the_light_reads_cover_the_current_project_as_the_app_does(tmp_path: Path) -> None:
    """SessionStart (its project: the git work tree of the payload's cwd) and `memory-mcp
    context` (the work tree it runs in, or --project) on the standard library show what
    the app's block shows: the current project's memories and `*`'s, no other project's,
    no task's working memory, nothing archived. A read by id (`get`) shows a memory of any
    project, as MemoryService.get does. Fails if the light reads lose the project filter or
    the caller's current project."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/alpha.git\n', encoding="utf-8"
    )
    assert current_project(None, repo) == "acme/alpha"
    settings = settings_for(tmp_path).model_copy(update={"project": "acme/alpha"})
    ids: dict[str, int] = {}

    async def write_and_read_the_apps_block() -> list[str]:
        async with opened(settings, FakeEmbedder()) as app:
            for key, project, task in (
                ("here", "acme/alpha", None),
                ("everywhere", "*", None),
                ("elsewhere", "acme/beta", None),
                ("working", "acme/alpha", "t1"),
                ("done", "acme/alpha", None),
            ):
                request = StoreRequest(key, f"memory {key}", project=project, task=task)
                outcome = await app.service.store_memory(app.caller, request)
                ids[key] = outcome.record.id
            await app.service.store.archive([ids["done"]], time.time())
            shown = keys_of(await memories_block(app.service, app.caller))
            got = await app.service.get(app.caller, ids["elsewhere"])
            assert got.project == "acme/beta"
            return shown

    apps = anyio.run(write_and_read_the_apps_block)
    assert sorted(apps) == ["everywhere", "here"]

    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    done, _elapsed = run_hook("session-start", {"session_id": "s", "cwd": str(repo)}, env)
    assert done.returncode == 0, done.stderr
    assert sorted(keys_of(done.stdout)) == sorted(apps)
    assert "memory_mcp.app.reads" in imported(done.stderr)  # the light road, not the app's

    for where, extra in ((repo, {}), (tmp_path, {"MEMORY_MCP_PROJECT": "acme/alpha"})):
        context = subprocess.run(
            [EXE, "context"],
            capture_output=True,
            text=True,
            env={**env, **extra},
            cwd=where,
            timeout=60,
        )
        assert context.returncode == 0, context.stderr
        assert sorted(keys_of(context.stdout)) == sorted(apps), where
        assert heavy(imported(context.stderr), READING_HEAVY) == []
    # Outside any work tree and with no project named: every project, tasks still left out.
    everything = subprocess.run(
        [EXE, "context"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert sorted(keys_of(everything.stdout)) == ["elsewhere", "everywhere", "here"]

    got, names = reading([EXE, "get", str(ids["elsewhere"]), "--json"], env)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["key"] == "elsewhere"
    assert heavy(names, READING_HEAVY) == []


def keys_of(block: str) -> list[str]:
    return [item.attrib["key"] for item in ET.fromstring(block).findall("memory")]
