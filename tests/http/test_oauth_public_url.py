"""Where the OAuth issuer is: --public-url (the https address of the reverse proxy in front,
which Claude's connectors reach), checked before the server listens; behind that proxy,
the metadata names the public address and the sign-in page answers to its Host."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest
from pydantic import ValidationError

from memory_mcp.errors import InvalidInputError
from memory_mcp.http.oauth_provider import issuer_of
from memory_mcp.settings import Settings
from tests.http.team_server import EXE, free_port, running, server_env, token_add

PUBLIC = "https://memory.example.com"


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://Memory.Example.com:443/", PUBLIC),
        ("https://memory.example.com:8443", "https://memory.example.com:8443"),
        ("  ", None),
    ],
)
def test_a_public_url_is_kept_as_scheme_host_and_port(
    make_settings: Callable[..., Settings], given: str, kept: str | None
) -> None:
    assert make_settings(public_url=given).public_url == kept


@pytest.mark.parametrize(
    "given", ["ftp://memory.example.com", "https://memory.example.com/team", "memory.example.com"]
)
def test_a_public_url_with_a_path_or_another_scheme_is_refused(
    make_settings: Callable[..., Settings], given: str
) -> None:
    with pytest.raises(ValidationError, match="public_url"):
        make_settings(public_url=given)


def test_the_issuer_is_https_or_loopback(make_settings: Callable[..., Settings]) -> None:
    assert issuer_of(make_settings(oauth=True, port=9000)) == "http://127.0.0.1:9000"
    assert issuer_of(make_settings(oauth=True, public_url=PUBLIC)) == PUBLIC
    with pytest.raises(InvalidInputError, match="public_url.*needs --public-url"):
        issuer_of(make_settings(oauth=True, host="0.0.0.0"))
    with pytest.raises(InvalidInputError, match="use https"):
        issuer_of(make_settings(oauth=True, public_url="http://memory.example.com"))


def test_serve_with_oauth_beyond_loopback_needs_a_public_url(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    token_add(db, "w1")
    argv = [EXE, "serve", "--transport", "streamable-http", "--db", str(db), "--oauth"]
    argv += ["--host", "0.0.0.0", "--port", str(free_port())]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=server_env(tmp_path), timeout=120
    )
    assert done.returncode != 0
    assert "--public-url" in done.stderr


def test_behind_a_proxy_the_metadata_names_the_public_address(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    token_add(db, "w1")
    proxied = {"Host": "memory.example.com"}  # what a proxy that keeps the Host sends
    with running(tmp_path, "streamable-http", db, "--oauth", "--public-url", PUBLIC) as server:
        found = httpx2.get(f"{server.base}/.well-known/oauth-authorization-server", headers=proxied)
        metadata = found.json()
        assert metadata["issuer"] == PUBLIC
        assert metadata["authorization_endpoint"] == f"{PUBLIC}/authorize"
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        resource = httpx2.get(
            f"{server.base}/.well-known/oauth-protected-resource/mcp", headers=proxied
        ).json()
        assert (resource["resource"], resource["authorization_servers"]) == (
            f"{PUBLIC}/mcp",
            [PUBLIC],
        )
        refused = httpx2.post(f"{server.base}/mcp", headers=proxied, json={})
        assert refused.status_code == 401  # the public Host passes; the token is asked for
        assert (
            f'resource_metadata="{PUBLIC}/.well-known/oauth-protected-resource/mcp"'
            in (refused.headers["www-authenticate"])
        )
        page = httpx2.get(f"{server.base}/ui/authorize?request=x", headers=proxied)
        assert page.status_code == 400  # the page answers (the request is unknown) ...
        other = httpx2.get(
            f"{server.base}/ui/authorize?request=x", headers={"Host": "evil.example"}
        )
        assert other.status_code == 421  # ... to the public Host, not to any other
