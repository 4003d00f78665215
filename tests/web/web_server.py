"""A real `memory-mcp ui` process for tests, on 127.0.0.1 with a free port, over a store
seeded with the memories of three agents (one of them private to w2), tokens from the
real `memory-mcp token add`. Used by tests/web/test_web.py and tests/web/test_web_browser.py.

`python -m tests.web.web_browser docs/ui.png` takes the README's screenshot (over a seed
of its own: this one is for tests, hostile rows included)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2

from memory_mcp.models import Caller, Role, Scope, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import opened
from tests.http.team_server import EXE, START_DEADLINE_SECONDS, free_port, server_env

WORD = "quokka"  # in every seeded memory: one search finds them all
PRIVATE_KEY = "w2-private-plan"
PRIVATE_VALUE = "quokka: the plan only w2 may read (PRIVATE-W2-MARKER)"
HOSTILE_KEY = "xss<script>alert('key')</script>"
HOSTILE_VALUE = "<script>alert('value')</script> quokka <img src=x onerror=alert('img')>"
HOSTILE_TAG = "<b onmouseover=alert('tag')>"
HISTORY_KEY = "release-checklist"  # two versions: w1's, then the lead's
LONG_HISTORY_KEY = "build-status"  # w4's own, rewritten LONG_HISTORY_VERSIONS times
LONG_HISTORY_VERSIONS = 53

# (agent, role, request): what the store holds before the view starts.
SEED: list[tuple[str, Role, StoreRequest]] = [
    (
        "w1",
        Role.WORKER,
        StoreRequest(
            key="test-command",
            value="quokka: run `make test` before pushing; it sets up .venv itself",
            tags=["build"],
            scope=Scope.SWARM,
        ),
    ),
    (
        "w1",
        Role.WORKER,
        StoreRequest(key="w1-editor", value="quokka: w1 edits with Neovim", tags=["tools"]),
    ),
    ("w2", Role.WORKER, StoreRequest(key=PRIVATE_KEY, value=PRIVATE_VALUE, scope=Scope.AGENT)),
    (
        "w2",
        Role.WORKER,
        StoreRequest(
            key=HOSTILE_KEY,
            value=HOSTILE_VALUE,
            tags=[HOSTILE_TAG],
            metadata={"note": "</pre><script>alert('metadata')</script>"},
            scope=Scope.SWARM,
        ),
    ),
    (
        "w1",
        Role.WORKER,
        StoreRequest(
            key=HISTORY_KEY,
            value="quokka: tag, build, upload",
            tags=["release"],
            scope=Scope.SWARM,
        ),
    ),
    (  # the lead corrects w1's checklist: version 2, written by the lead
        "lead",
        Role.LEAD,
        StoreRequest(
            key=HISTORY_KEY,
            value="quokka: tag, build, sign, upload",
            tags=["release"],
            scope=Scope.SWARM,
        ),
    ),
    (
        "lead",
        Role.LEAD,
        StoreRequest(
            key="deploy-window",
            value="quokka: deploys happen on Tuesdays after 14:00 UTC",
            tags=["release", "ops"],
            scope=Scope.SWARM,
        ),
    ),
]


@dataclass
class WebServer:
    base: str  # http://127.0.0.1:PORT
    db: Path
    tokens: dict[str, str]  # agent -> token
    ids: dict[str, int]  # seeded key -> memory id
    process: subprocess.Popen[bytes]

    def get(
        self,
        path: str,
        token: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> httpx2.Response:
        sent = {"Authorization": f"Bearer {token}"} if token is not None else {}
        sent.update(headers or {})
        return httpx2.get(f"{self.base}{path}", headers=sent, params=params, timeout=60)


def seed(
    db: Path, data_dir: Path, memories: list[tuple[str, Role, StoreRequest]] = SEED
) -> tuple[dict[str, int], dict[str, str]]:
    """Store `memories` (SEED) through MemoryService (no vectors: the view's own worker embeds them
    with the real model) and w4's memory of many versions, and make tokens for w1 to w4
    and the lead: (ids by key, tokens by agent)."""

    async def write() -> tuple[dict[str, int], dict[str, str]]:
        ids: dict[str, int] = {}
        settings = Settings(db=str(db), data_dir=data_dir, memory_dir=data_dir / "notes")
        async with opened(settings) as app:
            for agent, role, request in memories:
                caller = Caller(agent, role, "seed")
                outcome = await app.service.store_memory(caller, request, embed_now=False)
                ids[request.key] = outcome.record.id
            w4 = Caller("w4", Role.WORKER, "seed")
            for step in range(1, LONG_HISTORY_VERSIONS + 1):
                request = StoreRequest(key=LONG_HISTORY_KEY, value=f"build step {step}")
                outcome = await app.service.store_memory(w4, request, embed_now=False)
            ids[LONG_HISTORY_KEY] = outcome.record.id
            agents = ("w1", "w2", "w3", "w4")
            tokens = {agent: await app.tokens.issue(agent) for agent in agents}
            tokens["lead"] = await app.tokens.issue("lead", Role.LEAD.value)
        return ids, tokens

    return anyio.run(write)


def _answers(http: httpx2.Client, base: str) -> bool:
    try:
        http.get(f"{base}/ui/login", timeout=5)
    except httpx2.TransportError:
        return False
    return True


def start(tmp: Path, db: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with (tmp / f"ui-{port}.log").open("wb") as log:
        process = subprocess.Popen(
            [EXE, "ui", "--db", str(db), "--port", str(port), *args],
            env=server_env(tmp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    with httpx2.Client() as http:  # one for every poll (tests/http/team_server.py, start)
        while not _answers(http, base):
            if process.poll() is not None:
                raise RuntimeError(f"memory-mcp ui exited {process.returncode}: see {tmp}")
            if time.monotonic() > deadline:
                stop(process)
                raise RuntimeError("memory-mcp ui did not listen in time")
            time.sleep(0.2)
    return process, base


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@contextmanager
def running(
    tmp: Path, memories: list[tuple[str, Role, StoreRequest]] = SEED
) -> Iterator[WebServer]:
    """A seeded store, tokens for w1, w2, w3 and the lead, and `memory-mcp ui` on it."""
    db = tmp / "team.db"
    ids, tokens = seed(db, tmp / "data", memories)
    process, base = start(tmp, db)
    try:
        yield WebServer(base, db, tokens, ids, process)
    finally:
        stop(process)
