"""Web logins kept by the server: the browser's cookie holds a random login id, never the
bearer token.

A token in a cookie is the agent's whole MCP credential, sent with every page and kept
by the browser; a login id opens only this view, ends at logout or after
`LOGIN_SECONDS`, and is useless to another process. The server keeps, per login, the
SHA-256 of the token it stands for (what the store looks tokens up by), so a revoked
token is refused from the next page on, as with the bearer header. Logins live in this
process's memory: a restart asks people to log in again. Ids are looked up by their own
SHA-256, so the table holds nothing a cookie could be rebuilt from."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

LOGIN_SECONDS = 12 * 3600  # a working day; then the form again
# Logging in again and again with one token drops that token's oldest login, so
# nobody can grow the table or push out someone else's logins.
MAX_LOGINS_PER_TOKEN = 16


@dataclass(frozen=True)
class Login:
    token_hash: str
    expires_at: float


def _key(login_id: str) -> str:
    return hashlib.sha256(login_id.encode("utf-8", "replace")).hexdigest()


class WebLogins:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._logins: dict[str, Login] = {}  # by the id's hash, oldest first

    def start(self, token_hash: str) -> str:
        """A new login for the holder of the token with this hash; returns its id (the
        cookie's value)."""
        now = self._clock()
        self._drop_expired(now)
        mine = [key for key, login in self._logins.items() if login.token_hash == token_hash]
        for key in mine[: max(0, len(mine) - MAX_LOGINS_PER_TOKEN + 1)]:
            del self._logins[key]
        login_id = secrets.token_urlsafe(32)
        self._logins[_key(login_id)] = Login(token_hash, now + LOGIN_SECONDS)
        return login_id

    def token_hash_of(self, login_id: str) -> str | None:
        """The token hash a live login stands for; None for an unknown or expired id."""
        key = _key(login_id)
        login = self._logins.get(key)
        if login is None:
            return None
        if login.expires_at <= self._clock():
            del self._logins[key]
            return None
        return login.token_hash

    def end(self, login_id: str) -> None:
        self._logins.pop(_key(login_id), None)

    def __len__(self) -> int:
        return len(self._logins)

    def _drop_expired(self, now: float) -> None:
        for key in [key for key, login in self._logins.items() if login.expires_at <= now]:
            del self._logins[key]


__all__ = ["LOGIN_SECONDS", "MAX_LOGINS_PER_TOKEN", "WebLogins"]
