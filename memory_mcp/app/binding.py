"""Where a server may listen, shared by the HTTP team server and the web view: loopback or
not, and the refusal to listen beyond loopback while the store has no token (nobody could
use the server then). Also how long a server waits for open streams when it stops."""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING

from memory_mcp.errors import InvalidInputError
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 5  # open SSE streams are closed after this on Ctrl-C / SIGTERM


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


async def refuse_open_network(settings: Settings, open_app: AppOpener) -> None:
    """Without a token nobody can use the server, so binding beyond loopback is a
    mistake; say so before anything listens. The store is opened without workers to ask:
    no model, watcher or worker starts for a server that is about to be refused."""
    async with open_app(settings, background=False) as app:
        has_tokens = await app.tokens.exist()
    if has_tokens:
        return
    if not is_loopback(settings.host):
        raise InvalidInputError(
            "host",
            f"refusing to listen on {settings.host}: the store has no tokens, so no agent "
            "could use the server; create one first with `memory-mcp token add AGENT_ID "
            f"--db {settings.db or settings.database_url}`",
        )
    log.warning("no tokens yet: every request will get 401; `memory-mcp token add AGENT_ID`")
