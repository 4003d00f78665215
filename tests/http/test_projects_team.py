"""Projects on a real team server (streamable HTTP, --oauth, SQLite and PostgreSQL): tokens
made by the real `memory-mcp token add --project` (run in this process), connections
choosing their project by the `X-Memory-Project` header or `?project=`. A token reads its
projects and `*` and writes only its projects; a lead leads only there; every tool keeps
to that; an OAuth login carries the projects of the token or code it signed in with; the
web view too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import BACKENDS, call, call_error, store_db
from tests.http.oauth_client import register, tokens_for
from tests.http.team_server import TeamServer, cli, running

ALPHA, BETA = "alpha", "beta"


def token_add(server_db: str, home: Path, agent: str, role: str, *options: str) -> str:
    """The real CLI, run in this process (team_server.cli: a process paid ~1 s of imports
    for each); the token (or one-time code) is the last stdout line."""
    out = cli(["token", "add", agent, "--role", role, "--db", server_db, *options], home)
    return out.strip().splitlines()[-1]


@dataclass
class Team:
    server: TeamServer
    tokens: dict[str, str]
    ids: dict[str, int] = field(default_factory=dict)

    @asynccontextmanager
    async def as_(
        self, who: str, project: str | None = None, via: str = "header"
    ) -> AsyncIterator[Client]:
        """A connection of `who`'s token (a token, or an OAuth access token), its
        project asked by header or by the URL's query."""
        token = self.tokens.get(who, who)
        headers, url = {"Authorization": f"Bearer {token}"}, self.server.url
        if project is not None and via == "header":
            headers["X-Memory-Project"] = project
        elif project is not None:
            url += "?" + urlencode({"project": project})
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode="legacy", read_timeout_seconds=120) as client:
                yield client


# Who holds which token: the projects it is granted (none: every project).
TOKENS = {
    "boss": ("lead", ()),
    "w-alpha": ("worker", (ALPHA,)),
    "w-beta": ("worker", (BETA,)),
    "w-both": ("worker", (ALPHA, BETA)),
    "lead-alpha": ("lead", (ALPHA,)),
}


@pytest.fixture(scope="module", params=BACKENDS)
def team(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Team]:
    tmp = tmp_path_factory.mktemp("projects-team")
    with store_db(request.param, tmp, request) as db:
        tokens = {
            agent: token_add(str(db), tmp, agent, role, *[f"--project={p}" for p in projects])
            for agent, (role, projects) in TOKENS.items()
        }
        with running(tmp, "streamable-http", db, "--oauth") as server:
            world = Team(server, tokens)
            anyio.run(_seed, world)
            yield world


async def _seed(team: Team) -> None:
    async with team.as_("boss") as boss:  # every project: no current one
        for project, key in (("*", "every-rule"), (ALPHA, "alpha-rule"), (BETA, "beta-rule")):
            made = await call(
                boss, "store_memory", key=key, value=f"The {key} of the otter team",
                scope="swarm", project=project,
            )  # fmt: skip
            team.ids[key] = made["id"]
        await call(boss, "memory-link", id=team.ids["alpha-rule"], to=team.ids["beta-rule"],
                   relation="follows")  # fmt: skip
    async with team.as_("w-alpha") as worker:
        made = await call(worker, "store_memory", key="alpha-note", value="otter note",
                          scope="swarm")  # fmt: skip
        team.ids["alpha-note"] = made["id"]


def found(result: dict[str, Any], name: str = "results") -> set[str]:
    return {item["key"] for item in result[name]} & {
        "every-rule", "alpha-rule", "beta-rule", "alpha-note"
    }  # fmt: skip


def test_a_token_reads_its_projects_and_every_projects(team: Team) -> None:
    async def check() -> None:
        async with team.as_("w-alpha") as alpha:  # one project granted: its current one
            assert found(await call(alpha, "memory-search", query="otter")) == {
                "every-rule", "alpha-rule", "alpha-note"
            }  # fmt: skip
            everything = await call(alpha, "memory-search", query="otter", project="*")
            assert "beta-rule" not in found(everything)  # all it may read, not all
            assert found(await call(alpha, "memory-list"), "memories") == {
                "every-rule", "alpha-rule", "alpha-note"
            }  # fmt: skip
            stored = await call(alpha, "store_memory", key="k", value="v")
            assert stored["project"] == ALPHA
            # Links to what it may not read are not shown, not followed, not counted.
            got = await call(alpha, "memory-get", id=team.ids["alpha-rule"])
            assert "links" not in got
            related = await call(alpha, "memory-related", id=team.ids["alpha-rule"])
            assert related["neighbours"] == []
            resource = (await alpha.read_resource("memory://context")).contents[0]
            text = getattr(resource, "text", "")
            assert "alpha-rule" in text and "beta-rule" not in text
        async with team.as_("w-both") as both:  # two: none current, reads both and `*`
            assert found(await call(both, "memory-search", query="otter")) == {
                "every-rule", "alpha-rule", "beta-rule", "alpha-note"
            }  # fmt: skip
            error = await call_error(both, "store_memory", key="k", value="v")
            assert "only an agent with every project may write to project '*'" in error
            error = await call_error(both, "memory-complete-task", task="t1")  # `*`'s tasks
            assert "only an agent with every project may write to project '*'" in error
        for via in ("header", "query"):
            async with team.as_("w-both", BETA, via) as in_beta:
                stored = await call(in_beta, "store_memory", key=f"b-{via}", value="v")
                assert stored["project"] == BETA
                assert found(await call(in_beta, "memory-search", query="otter")) == {
                    "every-rule", "beta-rule"
                }  # fmt: skip

    anyio.run(check)


# Every tool, asked by w-alpha about beta (or by lead-alpha, for the lead's tool): refused,
# or "not found" where an id names it (existence is private), and nothing changed.
ATTEMPTS: dict[str, Callable[[Team, Client], Awaitable[str]]] = {
    "store_memory": lambda t, c: call_error(c, "store_memory", key="x", value="v", project=BETA),
    "memory-search": lambda t, c: call_error(c, "memory-search", query="otter", project=BETA),
    "memory-list": lambda t, c: call_error(c, "memory-list", project=BETA),
    "memory-get": lambda t, c: call_error(c, "memory-get", id=t.ids["beta-rule"]),
    "memory-history": lambda t, c: call_error(c, "memory-history", id=t.ids["beta-rule"]),
    "memory-delete": lambda t, c: call_error(c, "memory-delete", id=t.ids["beta-rule"]),
    "memory-revert": lambda t, c: call_error(c, "memory-revert", id=t.ids["beta-rule"], version=1),
    "memory-delete-many": lambda t, c: call_error(
        c, "memory-delete-many", tags=["x"], project=BETA
    ),
    "memory-link": lambda t, c: call_error(
        c, "memory-link", id=t.ids["alpha-note"], to=t.ids["beta-rule"], relation="r"
    ),
    "memory-related": lambda t, c: call_error(c, "memory-related", id=t.ids["beta-rule"]),
}


@pytest.mark.parametrize("tool", list(ATTEMPTS))
def test_every_tool_keeps_a_token_to_its_projects(team: Team, tool: str) -> None:
    async def attempt() -> str:
        async with team.as_("w-alpha") as alpha:
            return await ATTEMPTS[tool](team, alpha)

    error = anyio.run(attempt)
    assert "'beta' is not one of yours" in error or "not found" in error, error


def test_the_connections_project_must_be_granted(team: Team) -> None:
    """Refused at connect (403), by header or by the URL's query; a name that is not one,
    400 before anything else."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}},
    }  # fmt: skip
    headers = {
        "Authorization": f"Bearer {team.tokens['w-alpha']}",
        "Accept": "application/json, text/event-stream",
    }
    for url, extra in (
        (team.server.url, {"X-Memory-Project": BETA}),
        (team.server.url + "?project=beta", {}),
    ):
        answer = httpx2.post(url, json=initialize, headers={**headers, **extra}, timeout=60)
        assert answer.status_code == 403, answer.text
        assert "'beta' is not one of this token's (alpha)" in answer.json()["error"]["message"]
    fine = httpx2.post(
        team.server.url, json=initialize, headers={**headers, "X-Memory-Project": ALPHA}, timeout=60
    )
    assert fine.status_code == 200, fine.text
    bad = httpx2.post(team.server.url + "?project=-x", json=initialize, headers=headers, timeout=30)
    assert bad.status_code == 400 and "invalid project" in bad.text


def test_a_lead_leads_only_within_its_projects(team: Team) -> None:
    async def check() -> None:
        async with team.as_("lead-alpha") as lead:
            # Another agent's swarm memory in its project: a lead's to change.
            updated = await call(
                lead, "store_memory", key="alpha-note", value="otter note, checked",
                scope="swarm",
            )  # fmt: skip
            assert updated["version"] == 2
            # The same powers over `*` (it reads it) take every project.
            error = await call_error(lead, "memory-delete", id=team.ids["every-rule"])
            assert "which you may not change" in error
            error = await call_error(
                lead, "inject-learning", learning="x", category="best-practice",
                project=BETA,
            )  # fmt: skip
            assert "'beta' is not one of yours" in error

    anyio.run(check)


def test_an_oauth_login_carries_the_projects_it_signed_in_with(team: Team) -> None:
    client = register(team.server)
    code = token_add(
        str(team.server.db), team.server.tmp, "oauth-w", "worker", "--oauth-code",
        f"--project={BETA}",
    )  # fmt: skip
    by_code = tokens_for(client, code)["access_token"]
    by_token = tokens_for(client, team.tokens["w-alpha"])["access_token"]

    async def check() -> None:
        async with team.as_(by_code) as beta:
            assert found(await call(beta, "memory-search", query="otter")) == {
                "every-rule", "beta-rule"
            }  # fmt: skip
            error = await call_error(beta, "memory-get", id=team.ids["alpha-rule"])
            assert "not found" in error
        async with team.as_(by_token) as alpha:
            assert "beta-rule" not in found(await call(alpha, "memory-search", query="otter"))

    anyio.run(check)


def test_the_web_view_shows_a_tokens_projects(team: Team) -> None:
    headers = {"Authorization": f"Bearer {team.tokens['w-alpha']}"}
    page = httpx2.get(f"{team.server.base}/ui/", headers=headers, timeout=60)
    assert page.status_code == 200
    assert "alpha-rule" in page.text and "beta-rule" not in page.text
    assert '<option value="beta"' not in page.text and '<option value="alpha"' in page.text
    asked = httpx2.get(f"{team.server.base}/ui/?project=beta", headers=headers, timeout=60)
    assert asked.status_code == 403 and "beta-rule" not in asked.text
    boss = {"Authorization": f"Bearer {team.tokens['boss']}"}
    page = httpx2.get(f"{team.server.base}/ui/?project=beta", headers=boss, timeout=60)
    assert "beta-rule" in page.text and "alpha-rule" not in page.text
