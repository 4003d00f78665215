"""Who an OAuth login is: each viewer of the permission matrix (tests/test_permission_matrix.py)
signs in through the MCP SDK's `OAuthClientProvider` with its agent's bearer token, on a
real `memory-mcp serve --oauth`, and the matrix is run over those connections. Every cell
must come out as the README's rules say, which is what the same agents' bearer tokens
get (tests/http/test_permission_matrix_http.py): an OAuth login sees and changes exactly
what its bearer token does, never more. Each viewer signs in once per server. On
streamable HTTP the server runs the whole matrix (read, delete, overwrite:
`whole_matrix`); on SSE the read paths (`read_paths`), which come out wrong if a login
gives a connection the wrong agent or session; the writes take the identity from the same
place (the reasoning of tests/http/test_permission_matrix_http.py)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.http.oauth_client import (
    HttpBrowser,
    MemoryTokenStorage,
    oauth_connection,
    sdk_client_auth,
)
from tests.http.team_server import TeamServer, running, token_add
from tests.http.test_permission_matrix_http import Job, in_a_world, read_paths, whole_matrix
from tests.test_permission_matrix import AGENTS, Viewer


def signed_in(server: TeamServer, token: str) -> AbstractAsyncContextManager[Client]:
    """A connection of its own client (registered, signed in with `token`, PKCE)."""
    browser = HttpBrowser(token)
    return oauth_connection(server, sdk_client_auth(server, browser, MemoryTokenStorage()))


@pytest.mark.parametrize(
    ("transport", "job"),
    [("streamable-http", whole_matrix), ("sse", read_paths)],
    ids=["streamable-http-whole", "sse-read"],
)
def test_an_oauth_login_sees_and_changes_exactly_what_its_bearer_token_does(
    tmp_path: Path, transport: str, job: Job
) -> None:
    db = tmp_path / "memory.db"
    tokens = {agent: token_add(db, agent, role) for agent, role in AGENTS.items()}
    with running(tmp_path, transport, db, "--oauth") as server:

        def connect(viewer: Viewer) -> AbstractAsyncContextManager[Client]:
            return signed_in(server, tokens[viewer.agent])

        assert anyio.run(in_a_world, server, tokens, job, connect) == []
