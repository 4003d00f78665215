"""The secrets guard through the tools: a secret in data is redacted and the memory kept, a
secret in a name is refused, code that only mentions secrets is stored whole, and the
answer says what was redacted without ever echoing a secret.

Fakes are built from pieces, so that this file itself does not trip secret scanners. The
corpus numbers per field are in test_secrets_corpus.py."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.checks.secret_scan import find_secrets
from memory_mcp.hooks.transcript import user_request
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

GITHUB = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
AWS = "AKIA" + "Q3ZRT7WX2YV6NB4K"  # the reproductions: keys stored as tags
AWS_TEMPORARY = "ASIA" + "J7KQ2WX5ZR3TY6VB"
GOOGLE = "AIza" + "SyB7xK2mQ9pL4vN8wR3tZ6cF1hJ5dG0sE2u"
WEBHOOK = "whsec_" + "Zq8rT2vLm9XkP4sWd7YbN1cHf6JgR3aE"

_PNG = base64.b64encode(bytes(range(256)) * 4).decode()
ORDINARY: dict[str, str] = {
    "commit id": "fixed in 1961ba8c3f0e4d2a9b7c6d5e4f3a2b1c0d9e8f7a, see the log",
    "short commit": "revert 1a4576e and 368b7d9",
    "uuid": f"request {uuid.UUID(int=0x12345678123456781234567812345678)} failed",
    "sha256": "sha256:" + hashlib.sha256(b"release.tar.gz").hexdigest(),
    "data uri": f"logo: data:image/png;base64,{_PNG}",
    "base64 blob": _PNG[:200],
    "url without password": "docs at https://user@example.com/path?q=1 and https://example.com:8443/x",
    "url placeholder": "postgres://app:${DB_PASSWORD}@db:5432/app or postgres://app:****@db/app",
    "code reading a secret": "password = os.environ['DB_PASSWORD']\ntoken = get_token()",
    "attribute reference": "api_key=settings.openai_api_key",
    "sk prefix words": "use sk-learn or scikit-learn; a task-queue; risk_live_updates flag",
    "hex key id": "gpg key 0x9F8E7D6C5B4A3921",
    "semver and dates": "v1.2.3-rc.4 released 2026-11-23T07:49:13Z",
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_high_entropy_text_is_not_a_secret(name: str) -> None:
    assert find_secrets(ORDINARY[name]) == [], name


def test_a_request_in_a_transcript_keeps_its_words_not_its_secret() -> None:
    request = user_request(f"deploy with the token {GITHUB} please")
    assert request == "deploy with the token [REDACTED:github-pat] please"


pytestmark = [pytest.mark.anyio]


def lead_server(make_settings: Callable[..., Settings]) -> Client:
    return Client(
        build_server(make_settings(agent_id="lead", role="lead"), FakeEmbedder(), open_app=open_app)
    )


async def test_code_that_mentions_secrets_is_stored_whole(
    make_settings: Callable[..., Settings],
) -> None:
    """The issue's false positives: a comparison with a placeholder password and a
    placeholder Slack token, each once refused whole."""
    snippets = [
        'if username == "valid_username" and password == "valid_password":\n    login()',
        "const web = new WebClient('xoxb-your-slack-token');",
    ]
    async with lead_server(make_settings) as client:
        for i, snippet in enumerate(snippets):
            stored = await call(client, "store_memory", key=f"snippet-{i}", value=snippet)
            assert "redacted" not in stored
            got = await call(client, "memory-get", id=stored["id"])
            assert got["value"] == snippet


async def test_a_key_in_a_tag_is_refused_before_tags_are_lower_cased(
    make_settings: Callable[..., Settings],
) -> None:
    async with lead_server(make_settings) as client:
        for secret, kind in ((AWS, "aws-access-token"), (AWS_TEMPORARY, "aws-access-token")):
            error = await call_error(
                client, "store_memory", key="k", value="v", tags=["deploy", secret]
            )
            # Counted from 1, as the characters are (issue 35: "tag 0 ... characters 1-20").
            assert "invalid tags: tag 2 holds a secret" in error, error
            assert f"{kind} at characters 1-20" in error, error
            assert secret[4:] not in error and secret.lower()[4:] not in error
        error = await call_error(client, "store_memory", key="k", value="v", tags=[GOOGLE])
        assert "invalid tags: tag 1 holds a secret (gcp-api-key at characters 1-39)" in error
        listed = await call(client, "memory-list")
        assert listed["memories"] == []


async def test_a_stripe_webhook_secret_is_redacted_in_data_and_refused_in_names(
    make_settings: Callable[..., Settings],
) -> None:
    line = f"STRIPE_WEBHOOK_SECRET={WEBHOOK}"
    async with lead_server(make_settings) as client:
        stored = await call(
            client, "store_memory", key="stripe", value=line, metadata={"env": line}
        )
        assert [(r["field"], r["kind"]) for r in stored["redacted"]] == [
            ("value", "stripe-webhook-secret"),
            ("metadata.env", "stripe-webhook-secret"),
        ]
        learned = await call(
            client,
            "inject-learning",
            learning=f"verify with {WEBHOOK}",
            category="preference",
        )
        assert [(r["field"], r["kind"]) for r in learned["redacted"]] == [
            ("learning", "stripe-webhook-secret")
        ]
        for arguments in (
            {"key": f"hook {WEBHOOK}", "value": "v"},
            {"key": "k", "value": "v", "tags": [WEBHOOK]},
            {"key": "k", "value": "v", "metadata": {WEBHOOK: 1}},
        ):
            error = await call_error(client, "store_memory", **arguments)
            assert "stripe-webhook-secret" in error and WEBHOOK[6:] not in error
        for memory_id in (stored["id"], learned["id"]):
            got = await call(client, "memory-get", id=memory_id)
            assert WEBHOOK not in json.dumps(got)
            assert "[REDACTED:stripe-webhook-secret]" in got["value"]


@BOTH_BACKENDS
async def test_a_redacted_memory_keeps_the_rest_and_says_what_went(
    make_settings: Callable[..., Settings],
) -> None:
    value = f"CI publishes with the token {GITHUB}; rotate it monthly."
    metadata = {"ci": {"token": GITHUB, "runner": "linux"}, "hosts": ["a", f"b {AWS}"]}
    async with lead_server(make_settings) as client:
        stored = await call(client, "store_memory", key="ci", value=value, metadata=metadata)
        start = value.index(GITHUB)
        assert stored["redacted"] == [
            {"field": "value", "kind": "github-pat", "start": start, "end": start + 40},
            {"field": "metadata.ci.token", "kind": "github-pat", "start": 0, "end": 40},
            {"field": "metadata.hosts[1]", "kind": "aws-access-token", "start": 2, "end": 22},
        ]
        got = await call(client, "memory-get", id=stored["id"])
        assert got["value"] == (
            "CI publishes with the token [REDACTED:github-pat]; rotate it monthly."
        )
        assert got["metadata"] == {
            "ci": {"token": "[REDACTED:github-pat]", "runner": "linux"},
            "hosts": ["a", "b [REDACTED:aws-access-token]"],
        }
        # The same write again is the same memory: nothing changes, and it says so again.
        again = await call(client, "store_memory", key="ci", value=value, metadata=metadata)
        assert (again["version"], again["created"]) == (1, False)
        assert again["redacted"] == stored["redacted"]
        found = await call(client, "memory-search", query="rotate monthly")
        assert [r["id"] for r in found["results"]] == [stored["id"]]
        history = await call(client, "memory-history", id=stored["id"])
        everything = json.dumps([stored, again, got, found, history])
        assert GITHUB[4:] not in everything and AWS[4:] not in everything


async def test_a_secret_in_a_name_is_refused_naming_the_field_and_characters(
    make_settings: Callable[..., Settings],
) -> None:
    async with lead_server(make_settings) as client:
        error = await call_error(client, "store_memory", key=f"token-{GITHUB}", value="v")
        assert "invalid key: holds a secret (github-pat at characters 7-46)" in error
        error = await call_error(
            client, "store_memory", key="k", value="v", metadata={"ci": {GITHUB: 1}}
        )
        assert "invalid metadata: a key of metadata.ci holds a secret (github-pat" in error
        for text in (error,):
            assert GITHUB[4:] not in text
        assert (await call(client, "memory-list"))["memories"] == []
