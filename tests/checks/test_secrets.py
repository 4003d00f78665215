"""Secrets are refused in every text field; ordinary high-entropy text is not a secret.

The corpus below is real-shaped but fake: each secret has its provider's structure (prefix,
length, alphabet) with made-up characters."""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.checks.safety import secret_kind
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

# Built from pieces so that this file itself does not trip secret scanners.
_B64ISH = "Zq8rT2vLm9XkP4sWd7YbN1cHf6JgR3aE0uQiOtVyBxMnC5"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
SECRETS: dict[str, str] = {
    "rsa private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + _B64ISH,
    "openssh private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA",
    "pgp private key": "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "aws access key id": "aws key is " + "AKIA" + "IOSFODNN7EXAMPLQ",
    "aws secret": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github classic": "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "github fine-grained": "github_pat_" + "11ABCDEFG0123456789_" + "abcdefghij" * 6,
    "github app": "ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "gitlab": "glpat-" + "xYz12AbC34dEf56GhI78",
    "slack bot": "xoxb-" + "2648203645-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack webhook": "https://hooks.slack.com/services/"
    + "T0ABCDEF1/B0ABCDEF2/aBcDeFgHiJkLmNoPqRsTuVwX",
    "stripe live": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "stripe restricted": "rk_live_" + "51H8aBcDeFgHiJkLmNoPqRs",
    "openai": "sk-" + "proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90",
    "openai legacy": "sk-" + "T3BlbkFJabcdEFGHijklMNOPqrstUVWXyz0123456789ab",
    "anthropic": "sk-ant-" + "api03-" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_abcdEFGH",
    "google": "AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v",
    "huggingface": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgHiJ",
    "npm": "npm_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "jwt": "session: " + JWT,
    "postgres url": "postgres://admin:password@db.internal:5432/app",
    "mysql url": "DATABASE_URL=mysql://root:s3cr3t-Pa55@10.0.0.4/shop",
    "redis url": "redis://:hunter2hunter2@cache:6379/0",
    "password assignment": "password=Tr0ub4dor&3",
    "secret yaml": "client_secret: 9f8e7d6c5b4a3F2E1D0C",
    "token json": '{"token": "a8F3kL9mQ2xZ7vB4nW6c"}',
    "api key env": "export API_KEY=Zq8rT2vLm9XkP4sWd7Yb",
    "bearer": "Authorization: Bearer " + "a8F3kL9mQ2xZ7vB4nW6cR1tY5uI0oP",
}

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
    "url angle placeholder": "mysql://root:<password>@localhost/db",
    "code reading a secret": "password = os.environ['DB_PASSWORD']\ntoken = get_token()",
    "attribute reference": "api_key=settings.openai_api_key",
    "prose about passwords": "Password policy: at least 12 characters. Rotate the token monthly.",
    "password word": "password: required",
    "password placeholder": "password=changeme and secret=<your-secret> and token=${TOKEN}",
    "python snippet": "def login(user, password):\n    return check(user, password)  # no secret",
    "sk prefix words": "use sk-learn or scikit-learn; a task-queue; risk_live_updates flag",
    "eyJ without jwt shape": "the prefix eyJ marks base64 JSON",
    "aws docs": "set AWS_ACCESS_KEY_ID in the environment; never commit it",
    "hex key id": "gpg key 0x9F8E7D6C5B4A3921",
    "semver and dates": "v1.2.3-rc.4 released 2026-11-23T07:49:13Z",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_real_shaped_secrets_are_detected(name: str) -> None:
    assert secret_kind(SECRETS[name]) is not None, name


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_text_is_not_a_secret(name: str) -> None:
    assert secret_kind(ORDINARY[name]) is None, name


pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


async def test_a_secret_is_refused_in_every_field_and_the_error_never_echoes_it(
    make_settings: Callable[..., Settings],
) -> None:
    secret = SECRETS["github classic"]
    places: list[tuple[dict[str, object], str]] = [
        ({"key": f"token-{secret}", "value": "v"}, "key"),
        ({"key": "k", "value": f"the token is {secret}"}, "value"),
        ({"key": "k", "value": "v", "tags": ["ok", secret]}, "tags"),
        ({"key": "k", "value": "v", "metadata": {"ci": {"token": secret}}}, "metadata"),
        ({"key": "k", "value": "v", "metadata": {secret: 1}}, "metadata"),
        ({"key": "k", "value": "v", "metadata": {"l": [1, [SECRETS["jwt"]]]}}, "metadata"),
        ({"key": "k", "value": SECRETS["stripe live"]}, "value"),
        ({"key": "k", "value": SECRETS["postgres url"]}, "value"),
    ]
    server = build_server(make_settings(agent_id="lead", role="lead"), FakeEmbedder())
    async with Client(server) as client:
        for arguments, field in places:
            error = await call_error(client, "store_memory", **arguments)
            assert f"invalid {field}:" in error, error
            assert "secret" in error
            assert secret[8:] not in error, error
            assert "password@" not in error, error
        error = await call_error(
            client, "inject-learning", learning=f"use {secret}", category="best-practice"
        )
        assert "invalid learning:" in error
        assert "GitHub token" in error
        everything = await call(client, "memory-search", query="token k v", limit=50)
        assert everything["results"] == []
