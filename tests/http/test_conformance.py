"""The official MCP conformance suite (npm @modelcontextprotocol/conformance 0.1.16, from
the Makefile's NPM_PACKAGES) against a real team server (`memory-mcp serve --transport
streamable-http`, a real token): the scenarios that apply to any server pass.

The suite sends no custom headers, so it talks to a small proxy on 127.0.0.1 that adds
the bearer token and forwards everything else as it came (the Host and Origin headers
too: dns-rebinding-protection judges the server's own check) and streams the answers
(SSE). One server and one proxy for every scenario (each its own node process, two at
a time).
The suite needs Node >= 22 (fs.globSync); on an older Node it runs with
node/fs_globsync.mjs, which gives it glob's globSync."""

from __future__ import annotations

import functools
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from tests.http.team_server import free_port, running, token_add

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / ".venv" / "npm" / "node_modules" / ".bin" / "conformance"
NODE20_LOADER = Path(__file__).with_name("node") / "fs_globsync.mjs"
SUITE_TIMEOUT_SECONDS = 300  # a busy 2-core machine; normally ~3 s a scenario

# Each scenario and the checks it reports, all to be SUCCESS. The suite's other server
# scenarios expect its own test tools, resources and prompts (REFERENCE.md).
SCENARIOS = {
    "server-initialize": {"server-initialize"},
    "ping": {"ping"},
    "tools-list": {"tools-list"},
    "resources-list": {"resources-list"},
    "prompts-list": {"prompts-list"},
    "server-sse-multiple-streams": {
        "server-accepts-multiple-post-streams",
        "server-sse-streams-functional",
    },
    "dns-rebinding-protection": {
        "localhost-host-rebinding-rejected",
        "localhost-host-valid-accepted",
    },
}
# Hop-by-hop headers, and what the proxy sets itself.
NOT_FORWARDED = {"connection", "keep-alive", "transfer-encoding", "content-length", "authorization"}


class BearerProxy:
    """An ASGI app: each request goes to `upstream` as it came, with `Authorization:
    Bearer <token>` added; the answer streams back as the server sends it."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = upstream
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in NOT_FORWARDED
        ]
        headers.append(("authorization", f"Bearer {self.token}"))
        client = httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=None))  # SSE: no read limit
        upstream = client.build_request(
            request.method,
            f"{self.upstream}{request.url.path}",
            params=request.url.query,
            headers=headers,
            content=await request.body(),
        )
        answer = await client.send(upstream, stream=True)

        async def close() -> None:
            await answer.aclose()
            await client.aclose()

        response = StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers={k: v for k, v in answer.headers.items() if k.lower() not in NOT_FORWARDED},
            background=BackgroundTask(close),
        )
        await response(scope, receive, send)


@contextmanager
def bearer_proxy(upstream: str, token: str) -> Iterator[str]:
    """The proxy served by uvicorn in a thread of this process; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(
        BearerProxy(upstream, token),
        host="127.0.0.1",
        port=port,
        lifespan="off",
        ws="none",
        log_level="warning",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bearer-proxy", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@functools.cache
def node() -> list[str]:
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    return ["node"] if major >= 22 else ["node", "--import", NODE20_LOADER.as_uri()]


@dataclass
class Outcome:
    returncode: int
    output: str  # the suite's own report, for a failure's message
    checks: dict[str, str]  # check id -> SUCCESS, FAILURE, WARNING, INFO


def run_scenario(url: str, scenario: str, out: Path) -> Outcome:
    done = subprocess.run(
        [*node(), str(SUITE), "server", "--url", url, "--scenario", scenario, "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=SUITE_TIMEOUT_SECONDS,
        check=False,
    )
    saved = list(out.glob("*/checks.json"))  # -o DIR: DIR/server-SCENARIO-TIME/checks.json
    assert len(saved) == 1, done.stdout
    checks: list[dict[str, Any]] = json.loads(saved[0].read_text(encoding="utf-8"))
    return Outcome(done.returncode, done.stdout, {c["id"]: c["status"] for c in checks})


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every scenario through the proxy, and `ping` straight to the server without a
    token (key "no-token"), against one server."""
    assert SUITE.exists(), f"no {SUITE}: `make install-dev` installs it (NPM_PACKAGES)"
    tmp = tmp_path_factory.mktemp("conformance")
    db = tmp / "team.db"
    token = token_add(db, "conformance")
    with running(tmp, "streamable-http", db) as server, bearer_proxy(server.base, token) as proxy:
        runs = {name: (proxy + "/mcp", name) for name in SCENARIOS}
        runs["no-token"] = (server.url, "ping")
        # Two at a time: measured ~30% faster than one by one on 2 cores; more is no faster.
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = {
                key: pool.submit(run_scenario, url, scenario, tmp / key)
                for key, (url, scenario) in runs.items()
            }
            return {key: future.result() for key, future in done.items()}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_team_server_passes_the_scenario(outcomes: dict[str, Outcome], scenario: str) -> None:
    result = outcomes[scenario]
    assert result.checks == dict.fromkeys(SCENARIOS[scenario], "SUCCESS"), result.output
    assert result.returncode == 0, result.output


def test_the_suite_reports_what_fails(outcomes: dict[str, Outcome]) -> None:
    """The control: without the proxy's token the server refuses, and the suite says so
    in its exit code and its saved checks (what the tests above read)."""
    result = outcomes["no-token"]
    assert result.checks == {"ping": "FAILURE"}, result.output
    assert result.returncode == 1, result.output
    assert "Authentication required" in result.output, result.output
