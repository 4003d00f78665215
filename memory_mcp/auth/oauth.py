"""OAuth 2.1 grants for the team server: who a sign-in is, and the codes and tokens it
gets. The MCP SDK's authorization-server routes call these rules through
http/oauth_provider.py; the sign-in page (web/authorize_page.py) calls them directly.

Who a sign-in is: the person pastes an agent's bearer token (`memory-mcp token add`) or a
one-time code (`memory-mcp token add AGENT --oauth-code`), and the grant acts as that agent
with that role, exactly as the bearer token does. A grant made with a bearer token lasts
only while that token does; `memory-mcp token revoke AGENT` ends the agent's grants too.

Every secret handed out here (codes, access and refresh tokens, one-time codes, request
ids) is 256 random bits with a prefix that says what it is; the store keeps its SHA-256
only, so a copy of the store opens nothing. An authorization code is used once, within
CODE_SECONDS, and a second use ends the grant the first one made (RFC 6749 §4.1.2); a
refresh token is used once too, and presenting a used one ends its grant (OAuth 2.1
§4.3.1: it was copied)."""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory_mcp.auth.tokens import (
    AgentTokens,
    checked_agent_id,
    checked_projects,
    checked_role,
    new_agent_id,
    token_hash,
)
from memory_mcp.models import Role
from memory_mcp.store.oauth_rows import CodeRow, NewToken, OAuthStore, RequestRow, TokenView

log = logging.getLogger(__name__)

ACCESS_PREFIX = "mmcp_at_"
REFRESH_PREFIX = "mmcp_rt_"
CODE_PREFIX = "mmcp_ac_"
LOGIN_CODE_PREFIX = "mmcp_otc_"
MAX_SECRET_CHARS = 200  # ours are ~50; anything longer is not one of them

CODE_SECONDS = 120  # the client exchanges it as soon as the browser brings it back
REQUEST_SECONDS = 600  # a person signing in
LOGIN_CODE_SECONDS = 600  # made by an operator, pasted by a person
REFRESH_SECONDS = 30 * 86_400  # renewed by each refresh; `token revoke` ends it any time
# Open registration: clients that never get a grant are dropped after a day, and only
# this many are kept (Claude registers a new client for each connection attempt); never
# one in the middle of signing in (it registered less than REQUEST_SECONDS ago, or has a
# request waiting or a code not exchanged). The team server also bounds how many register
# a minute (http/oauth_provider.py), so at most that many in REQUEST_SECONDS are kept.
CLIENT_UNUSED_SECONDS = 86_400
MAX_UNUSED_CLIENTS = 1_000
MAX_REQUESTS_PER_CLIENT = 20
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Where /authorize sends the browser: the sign-in page (web/authorize_page.py), next to the
# web view it looks like.
SIGN_IN_PATH = "/ui/authorize"


@dataclass(frozen=True)
class AuthorizationRequest:
    """A checked authorization request (client, redirect and PKCE already validated)."""

    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: tuple[str, ...]
    resource: str


@dataclass(frozen=True)
class SignedIn:
    """Who a sign-in is: an agent and role, and the bearer token it used (None for a
    one-time code)."""

    agent_id: str
    role: Role
    agent_token_hash: str | None
    projects: frozenset[str] | None = None  # the token's or code's grants; None: every one


@dataclass(frozen=True)
class CodeGrant:
    """What an authorization code was issued for (the SDK checks PKCE, redirect, expiry)."""

    client_id: str
    agent_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str
    expires_at: float


@dataclass(frozen=True)
class GrantToken:
    """A live access or refresh token: its grant, and who the grant acts as."""

    grant_id: int
    client_id: str
    agent_id: str
    role: Role
    scopes: tuple[str, ...]
    resource: str
    expires_at: float
    projects: frozenset[str] | None = None  # as the token or code it was signed in with

    @property
    def subject(self) -> str:
        """The grant, for the SDK's session binding: the same across refreshes, so a
        client's MCP session outlives its access token; never another grant's."""
        return f"oauth-grant-{self.grant_id}"


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: tuple[str, ...]


def redirect_uri_problem(uri: str) -> str | None:
    """Why a redirect URI may not be registered (None: it may): https anywhere, http only
    to this machine (RFC 8252's loopback redirect), no fragment, no user info."""
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri[:80]!r} is not a URL"
    if parts.fragment or parts.username is not None:
        return f"{uri[:80]!r} may not have a fragment or user info"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return None
    return f"{uri[:80]!r} is neither https:// nor http:// to a loopback address"


def redirect_to(uri: str, **params: str | None) -> str:
    """`uri` with `params` added to its query (its own parameters kept, RFC 6749 §3.1.2)."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(name, value) for name, value in params.items() if value is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _new(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def _ours(secret: str, prefix: str) -> bool:
    return secret.startswith(prefix) and len(secret) <= MAX_SECRET_CHARS


def _scopes(text: str) -> tuple[str, ...]:
    return tuple(text.split())


class OAuthGrants:
    def __init__(
        self,
        store: OAuthStore,
        tokens: AgentTokens,
        access_seconds: int = 3600,
        clock: Callable[[], float] = time.time,
        grants_per_agent: int = 16,
    ) -> None:
        self._store = store
        self._tokens = tokens
        self.access_seconds = access_seconds
        self.clock = clock
        self.grants_per_agent = grants_per_agent

    # -- clients and requests ------------------------------------------------------------------

    async def register_client(self, client_id: str, registration: str, name: str | None) -> None:
        now = self.clock()
        await self._store.add_client(
            client_id,
            registration,
            name[:200] if name else None,
            now,
            now - CLIENT_UNUSED_SECONDS,
            MAX_UNUSED_CLIENTS,
            now - REQUEST_SECONDS,  # time enough to sign in: never dropped before
        )

    async def client(self, client_id: str) -> str | None:
        """The client's registration (JSON, as the SDK wrote it)."""
        found = await self._store.client(client_id)
        return None if found is None else found[0]

    async def client_name(self, client_id: str) -> str | None:
        found = await self._store.client(client_id)
        return None if found is None else found[1]

    async def open_request(self, request: AuthorizationRequest) -> str:
        """Keep a checked request for the sign-in page; returns its id (for the page URL)."""
        request_id = secrets.token_urlsafe(32)
        now = self.clock()
        row = RequestRow(
            request.client_id,
            request.redirect_uri,
            request.redirect_uri_explicit,
            request.code_challenge,
            request.state,
            " ".join(request.scopes),
            request.resource,
        )
        await self._store.add_request(
            token_hash(request_id), row, now, now + REQUEST_SECONDS, MAX_REQUESTS_PER_CLIENT
        )
        return request_id

    async def pending(self, request_id: str) -> AuthorizationRequest | None:
        if not request_id or len(request_id) > MAX_SECRET_CHARS:
            return None
        row = await self._store.request(token_hash(request_id), self.clock())
        return None if row is None else _request(row)

    # -- the sign-in page ----------------------------------------------------------------------

    async def add_login_code(
        self, agent_id: str, role: str = Role.WORKER.value, projects: list[str] | None = None
    ) -> str:
        """A one-time sign-in code for the agent, granted `projects` (None: every one),
        shown once, valid LOGIN_CODE_SECONDS."""
        agent, checked = new_agent_id(agent_id), checked_role(role)
        granted = _stored(checked_projects(projects))
        code = _new(LOGIN_CODE_PREFIX)
        now = self.clock()
        await self._store.add_login_code(
            token_hash(code), agent, checked.value, now, now + LOGIN_CODE_SECONDS, granted
        )
        return code

    async def sign_in(self, credential: str) -> SignedIn | None:
        """Who a pasted bearer token or one-time code stands for (None: neither is valid).
        A one-time code is used up by this call."""
        credential = credential.strip()
        if _ours(credential, LOGIN_CODE_PREFIX):
            found = await self._store.take_login_code(token_hash(credential), self.clock())
            if found is None:
                return None
            return SignedIn(found[0], Role(found[1]), None, _loaded(found[2]))
        holder = await self._tokens.verify(credential)
        if holder is None:
            return None
        return SignedIn(holder.agent_id, holder.role, token_hash(credential), holder.projects)

    async def approve(self, request_id: str, who: SignedIn, issuer: str) -> str | None:
        """Answer the request with a new authorization code for `who`: the URL the browser
        goes back to (the client's redirect URI with code, state and iss). None: the
        request expired or was answered already."""
        code = _new(CODE_PREFIX)
        now = self.clock()
        request = await self._store.add_code(
            token_hash(code),
            token_hash(request_id),
            who.agent_id,
            who.role.value,
            who.agent_token_hash,
            now,
            now + CODE_SECONDS,
            _stored(None if who.projects is None else sorted(who.projects)),
        )
        if request is None:
            return None
        return redirect_to(request.redirect_uri, code=code, state=request.state, iss=issuer)

    async def deny(self, request_id: str, issuer: str) -> str | None:
        """The person said no: the client's redirect URI with `access_denied`."""
        request = await self._store.take_request(token_hash(request_id), self.clock())
        if request is None:
            return None
        return redirect_to(
            request.redirect_uri,
            error="access_denied",
            error_description="the person signing in declined",
            state=request.state,
            iss=issuer,
        )

    # -- the token endpoint --------------------------------------------------------------------

    async def code(self, code: str) -> CodeGrant | None:
        """An authorization code not used yet (expired ones too: the SDK says so). A used
        one ends the grant its first use made, and is not found."""
        if not _ours(code, CODE_PREFIX):
            return None
        row = await self._store.code(token_hash(code))
        if row is None:
            return None
        if row.used_at is not None:
            if row.grant_id is not None:
                await self._store.end_grant(row.grant_id)
            return None
        return _code_grant(row)

    async def exchange_code(self, code: str) -> IssuedTokens | None:
        """Use the code (once): a new grant with its first tokens. The agent's oldest
        grants beyond `grants_per_agent` end: signing in again and again makes no more
        room for an agent (its sessions are bounded per agent too, http/agent_sessions.py)."""
        now = self.clock()
        access, refresh, new = self._new_tokens(now)
        redeemed = await self._store.redeem_code(token_hash(code), now, new, self.grants_per_agent)
        if redeemed is None:
            return None
        row = await self._store.code(token_hash(code))
        if redeemed[1] and row is not None:
            log.info(
                "agent %r signed in once more than %d times: its oldest OAuth grant ended",
                row.agent_id,
                self.grants_per_agent,
            )
        scopes = _scopes(row.scopes) if row else ()
        return IssuedTokens(access, refresh, self.access_seconds, scopes)

    async def refresh_token(self, token: str) -> GrantToken | None:
        """A refresh token of a live grant, not used yet. A used one means a copy is about:
        its grant ends (OAuth 2.1 §4.3.1)."""
        view = await self._token(token, REFRESH_PREFIX, "refresh")
        if view is None:
            return None
        if view.used_at is not None:
            await self._store.end_grant(view.grant_id)
            return None
        return _grant_token(view)

    async def rotate(self, token: str) -> IssuedTokens | None:
        """Use the refresh token (once) for a new access token and a new refresh token."""
        now = self.clock()
        access, refresh, new = self._new_tokens(now)
        view = await self._token(token, REFRESH_PREFIX, "refresh")
        if view is None or await self._store.rotate(token_hash(token), now, new) is None:
            return None
        return IssuedTokens(access, refresh, self.access_seconds, _scopes(view.scopes))

    # -- every MCP request ---------------------------------------------------------------------

    async def access_token(self, token: str) -> GrantToken | None:
        """Who a live access token acts for (None: unknown, expired, or its grant ended)."""
        view = await self._token(token, ACCESS_PREFIX, "access")
        if view is None or view.expires_at <= self.clock():
            return None
        return _grant_token(view)

    async def revoke(self, token: str) -> None:
        """RFC 7009: an access or refresh token ends its whole grant."""
        for prefix, kind in ((ACCESS_PREFIX, "access"), (REFRESH_PREFIX, "refresh")):
            view = await self._token(token, prefix, kind)
            if view is not None:
                await self._store.end_grant(view.grant_id)

    async def revoke_agent(self, agent_id: str) -> int:
        """Every grant of the agent, its codes and its one-time sign-in codes."""
        return await self._store.end_agent(checked_agent_id(agent_id))

    async def _token(self, token: str, prefix: str, kind: str) -> TokenView | None:
        if not _ours(token, prefix):
            return None
        return await self._store.token(token_hash(token), kind)

    def _new_tokens(self, now: float) -> tuple[str, str, list[NewToken]]:
        access, refresh = _new(ACCESS_PREFIX), _new(REFRESH_PREFIX)
        return (
            access,
            refresh,
            [
                NewToken(token_hash(access), "access", now + self.access_seconds),
                NewToken(token_hash(refresh), "refresh", now + REFRESH_SECONDS),
            ],
        )


def _request(row: RequestRow) -> AuthorizationRequest:
    return AuthorizationRequest(
        row.client_id,
        row.redirect_uri,
        row.redirect_uri_explicit,
        row.code_challenge,
        row.state,
        _scopes(row.scopes),
        row.resource,
    )


def _code_grant(row: CodeRow) -> CodeGrant:
    return CodeGrant(
        row.client_id,
        row.agent_id,
        row.redirect_uri,
        row.redirect_uri_explicit,
        row.code_challenge,
        _scopes(row.scopes),
        row.resource,
        row.expires_at,
    )


def _grant_token(view: TokenView) -> GrantToken:
    return GrantToken(
        view.grant_id,
        view.client_id,
        view.agent_id,
        Role(view.role),
        _scopes(view.scopes),
        view.resource,
        view.expires_at,
        _loaded(view.projects),
    )


def _stored(projects: list[str] | None) -> str | None:
    return None if projects is None else json.dumps(sorted(projects))


def _loaded(projects: str | None) -> frozenset[str] | None:
    return None if projects is None else frozenset(json.loads(projects))


__all__ = [
    "ACCESS_PREFIX",
    "LOGIN_CODE_PREFIX",
    "SIGN_IN_PATH",
    "AuthorizationRequest",
    "CodeGrant",
    "GrantToken",
    "IssuedTokens",
    "OAuthGrants",
    "SignedIn",
    "redirect_to",
    "redirect_uri_problem",
]
