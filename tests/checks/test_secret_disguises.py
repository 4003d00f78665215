"""Issue 35, items 4 and 9: no character of a secret is stored, however it is written, and
wherever a string is stored.

- A secret longer than its rule's pattern, or glued to another, is redacted to the end of
  its word: a 44-character `ghp_` token once left `[REDACTED:github-pat]7890`.
- A secret split by a zero-width space or a soft hyphen, written in fullwidth or look-alike
  letters, or base64-encoded, is found as the secret it is.
- The names nobody scanned: a link's relation (memory-link, the graph profile's
  relationType), the agent a learning is about, an agent's or session's id, a note's
  path of any length; and a `learning:` key written with look-alike letters.

Fakes are built from pieces, so that this file itself does not trip secret scanners."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.checks.safety import redact_text
from memory_mcp.checks.secret_scan import find_secrets
from memory_mcp.errors import InvalidInputError
from memory_mcp.mcp.server import build_server
from memory_mcp.models import Caller, Role, Scope, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error, opened

BODY = "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"  # 36 characters
GITHUB = "ghp_" + BODY
GITLAB = "glpat-" + "Zx8Kq2Wm4Rt6Yp9Ls3Vb"  # 20 after the prefix, as the rule wants
SHOPIFY = "shpat_" + "0123456789abcdef0123456789abcdef"
SLACK = "xoxb-" + "1234567890123-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text)


def _stored(text: str) -> str:
    return redact_text(text)[0]


# -- item 4: the whole secret ------------------------------------------------------------


@pytest.mark.parametrize("token", [GITHUB, GITLAB, SHOPIFY], ids=["github", "gitlab", "shopify"])
def test_a_token_longer_than_its_pattern_leaves_no_tail(token: str) -> None:
    for tail in ("7890", "Q1w2E3r4T5y6", "-x_y9"):
        stored = _stored(f"deploy with {token}{tail} today")
        assert stored.startswith("deploy with [REDACTED:") and stored.endswith("] today"), stored
        assert tail not in stored and token[-6:] not in stored


def test_the_issues_44_character_token_is_redacted_whole() -> None:
    token = GITHUB + "7890"
    assert len(token) == 44
    assert _stored(f"token {token}.") == "token [REDACTED:github-pat]."
    (finding,) = find_secrets(token)
    assert (finding.start, finding.end) == (0, 44)


def test_concatenated_tokens_are_redacted_whole() -> None:
    for glued in (GITHUB + GITHUB, GITHUB + GITHUB[:20], GITHUB + SLACK, GITLAB + GITHUB):
        stored = _stored(f"a {glued} b")
        assert stored.count("[REDACTED:") >= 1, stored
        assert stored.startswith("a [REDACTED:") and stored.endswith("] b"), stored


def test_a_secret_still_ends_at_prose_punctuation_and_quotes() -> None:
    assert _stored(f"use {GITHUB}, then rotate") == "use [REDACTED:github-pat], then rotate"
    assert _stored(f'token="{GITHUB}"') == 'token="[REDACTED:github-pat]"'
    assert _stored(f"({GITHUB})") == "([REDACTED:github-pat])"


# -- item 9: disguised secrets -----------------------------------------------------------

DISGUISED = {
    "zero-width space": GITHUB[:12] + "\u200b" + GITHUB[12:],
    "soft hyphen": GITHUB[:20] + "\u00ad" + GITHUB[20:],
    "word joiner and BOM": GITHUB[:8] + "\u2060" + GITHUB[8:30] + "\ufeff" + GITHUB[30:],
    "fullwidth": _fullwidth(GITHUB),
    "Cyrillic look-alikes": "gh\u0440_" + BODY.replace("a", "\u0430").replace("E", "\u0415"),
    "base64": base64.b64encode(GITHUB.encode()).decode(),
    "base64 of an env line": base64.b64encode(f"GITHUB_TOKEN={GITHUB}\n".encode()).decode(),
    "URL-safe base64": base64.urlsafe_b64encode(f"x {GITHUB} ??>".encode()).decode(),
}


@pytest.mark.parametrize("name", sorted(DISGUISED))
def test_a_disguised_secret_is_redacted_in_data(name: str) -> None:
    disguised = DISGUISED[name]
    stored = _stored(f"CI pushes with {disguised} nightly")
    assert stored == "CI pushes with [REDACTED:github-pat] nightly", stored


@pytest.mark.parametrize("name", sorted(DISGUISED))
def test_a_disguised_secret_is_refused_in_a_name(name: str) -> None:
    for name_text in (f"token-{DISGUISED[name]}", f"ci {DISGUISED[name]}"):
        (finding,) = find_secrets(name_text)
        assert finding.kind == "github-pat"
        assert name_text[finding.start - 1] in "- "


def test_text_that_only_looks_odd_is_not_a_secret() -> None:
    """Base64 of an image or of plain words, fullwidth prose, invisible characters in
    ordinary words, and Python aliasing a module's function under its own name."""
    for text in (
        base64.b64encode(bytes(range(256))).decode(),
        base64.b64encode(b"the quick brown fox jumps over the lazy dog").decode(),
        _fullwidth("the token is rotated monthly"),
        "pass\u200bword rotation is monthly; so\u00adft hyphen",
        "RegEnumKey = win32api.RegEnumKey",
        "RegEnumKey = win32api.RegEnumKey\nRegOpenKeyEx = win32api.RegOpenKeyEx",
        "self.api_key = config.api_key",
    ):
        assert find_secrets(text) == [], text


# -- item 9: every place a string is stored ----------------------------------------------

pytestmark = pytest.mark.anyio


def _server(make_settings: Callable[..., Settings], **settings: object) -> Client:
    return Client(build_server(make_settings(**settings), FakeEmbedder(), open_app=open_app))


async def test_a_link_relation_holding_a_secret_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with _server(make_settings, agent_id="w1") as client:
        a = await call(client, "store_memory", key="a", value="alpha")
        b = await call(client, "store_memory", key="b", value="beta")
        for relation in (GITHUB, DISGUISED["Cyrillic look-alikes"], _fullwidth(GITHUB)):
            error = await call_error(
                client, "memory-link", id=a["id"], to=b["id"], relation=relation
            )
            assert "invalid relation: holds a secret (github-pat" in error, error
            assert BODY[4:] not in error
        got = await call(client, "memory-get", id=a["id"])
        assert "links" not in got


async def test_a_graph_relation_type_holding_a_secret_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with _server(make_settings, agent_id="w1", profile="knowledge-graph") as client:
        entities = [
            {"name": "Alice", "entityType": "person", "observations": ["on call"]},
            {"name": "Acme", "entityType": "org", "observations": ["makes anvils"]},
        ]
        await client.call_tool("create_entities", {"entities": entities})
        relation = {"from": "Alice", "to": "Acme", "relationType": GITHUB}
        result = await client.call_tool("create_relations", {"relations": [relation]})
        assert result.is_error
        graph = await client.call_tool("read_graph", {})
        assert GITHUB not in json.dumps(graph.structured_content)
        assert BODY not in json.dumps([c.model_dump() for c in graph.content])


async def test_the_agent_a_learning_is_about_may_not_be_a_secret(
    make_settings: Callable[..., Settings],
) -> None:
    async with _server(make_settings, agent_id="lead", role="lead") as client:
        for agent in (GITHUB, f"worker-{GITHUB}", _fullwidth(GITHUB)):
            error = await call_error(
                client,
                "inject-learning",
                learning="Run migrations first",
                category="best-practice",
                agent_id=agent,
            )
            assert "invalid agent_id: holds a secret (github-pat" in error, error
        learned = await call(
            client,
            "inject-learning",
            learning="Run migrations first",
            category="best-practice",
            agent_id="worker-2",
        )
        assert learned["about_agent"] == "worker-2"


def test_an_agent_or_session_id_may_not_be_a_secret(
    make_settings: Callable[..., Settings],
) -> None:
    for field in ("agent_id", "session_id"):
        with pytest.raises(ValueError, match="holds a secret"):
            make_settings(**{field: f"ci-{GITHUB}"})
    assert make_settings(agent_id="worker-2").agent_id == "worker-2"


async def test_a_token_or_sign_in_code_is_not_made_for_a_secret_agent_name(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError, match="holds a secret"):
            await app.tokens.issue(GITHUB)
        with pytest.raises(InvalidInputError, match="holds a secret"):
            await app.oauth.add_login_code(GITHUB)
        assert (await app.tokens.issue("worker-2")).startswith("mmcp_")


async def test_a_secret_deep_in_a_long_note_path_is_never_stored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The key of a note past 256 characters keeps only the path's start (and a digest),
    so a token further along was stored only in `file_path`."""
    memory = tmp_path / "memory"  # the settings' personal folder (tests/conftest.py)
    folder = memory / ("x" * 120) / ("y" * 120) / f"ci-{GITHUB}"
    folder.mkdir(parents=True)
    note = folder / "deploy.md"
    note.write_text("# Deploy\nWe deploy with blue-green switches.\n")
    clean = memory / "clean.md"
    clean.write_text("# Clean\nNothing to hide.\n")
    async with opened(make_settings(agent_id="a1")) as app:
        outcome = await app.notes.index_path(note)
        assert outcome.report is not None and outcome.report.created == 0
        assert "invalid file_path: holds a secret (github-pat" in outcome.report.refused[0]
        kept = await app.notes.index_path(clean)
        assert kept.report is not None and kept.report.created == 1
        records = [r async for r in app.service.store.iter_records()]
    assert [r.key for r in records] == [f"file:{clean.name}#clean"]
    assert BODY not in json.dumps([(r.key, r.file_path, r.metadata) for r in records])


async def test_a_look_alike_learning_key_is_the_leads_too(
    make_settings: Callable[..., Settings],
) -> None:
    worker = Caller("wk", Role.WORKER, "s1")
    async with opened(make_settings(agent_id="wk")) as app:
        for key in (
            "\uff4cearning:preference:abc",  # fullwidth l
            "\uff4c\uff45\uff41\uff52\uff4e\uff49\uff4e\uff47\uff1ax",  # all fullwidth
            "l\u0435arning:preference:abc",  # Cyrillic e
            "LEARNING:preference:abc",
        ):
            for scope in (Scope.SWARM, Scope.AGENT):
                with pytest.raises(InvalidInputError, match="are the lead's"):
                    await app.service.store_memory(worker, _request(key, scope, tags=["learning"]))
        stored = await app.service.store_memory(worker, _request("learnings-to-read", Scope.AGENT))
        assert stored.record.key == "learnings-to-read"


def _request(key: str, scope: Scope, tags: list[str] | None = None) -> StoreRequest:
    return StoreRequest(key=key, value="look here first", scope=scope, tags=tags or [])
