"""The OAuth tables (store/schema.py, `oauth_*`): clients, authorization requests waiting
for a person, one-time sign-in codes, authorization codes, grants and their tokens. Only
rows here; the rules (lifetimes, hashing, what a second use means) live in
memory_mcp/auth/oauth.py, which hands this module hashes, never a secret.

A grant is alive while its row exists and, when someone signed in with a bearer token,
while that token's row does: revoking the token (however it is revoked) ends the grants
made with it, at the next request, without this module being told."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    and_,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.store.engine import Engines
from memory_mcp.store.schema import (
    AgentTokenRow,
    OAuthClientRow,
    OAuthCodeRow,
    OAuthGrantRow,
    OAuthLoginCodeRow,
    OAuthRequestRow,
    OAuthTokenRow,
)

C, Q, L = OAuthClientRow, OAuthRequestRow, OAuthLoginCodeRow
K, G, T, A = OAuthCodeRow, OAuthGrantRow, OAuthTokenRow, AgentTokenRow


@dataclass(frozen=True)
class RequestRow:
    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: str
    resource: str


@dataclass(frozen=True)
class CodeRow:
    client_id: str
    agent_id: str
    role: str
    agent_token_hash: str | None
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    scopes: str
    resource: str
    expires_at: float
    used_at: float | None
    grant_id: int | None
    projects: str | None = None  # JSON, as stored


@dataclass(frozen=True)
class TokenView:
    """A token with the grant it belongs to."""

    grant_id: int
    client_id: str
    agent_id: str
    role: str
    scopes: str
    resource: str
    expires_at: float
    used_at: float | None
    projects: str | None = None  # the grant's, JSON as stored


@dataclass(frozen=True)
class NewToken:
    token_hash: str
    kind: str  # access | refresh
    expires_at: float


def _alive() -> ColumnElement[bool]:
    """The grant's row is there and so is the bearer token it was signed in with, if any."""
    return or_(
        G.agent_token_hash.is_(None),
        exists(select(A.id).where(A.token_hash == G.agent_token_hash)),
    )


def _token_view(row: Any) -> TokenView:
    return TokenView(
        row.grant_id,
        row.client_id,
        row.agent_id,
        row.role,
        row.scopes,
        row.resource,
        row.expires_at,
        row.used_at,
        row.projects,
    )


class OAuthStore:
    def __init__(self, engines: Engines) -> None:
        self._engines = engines

    # -- clients -----------------------------------------------------------------------------

    async def add_client(
        self,
        client_id: str,
        registration: str,
        client_name: str | None,
        now: float,
        unused_before: float,
        max_unused: int,
        kept_since: float,
    ) -> None:
        """Register a client; clients that never got a grant go once older than
        `unused_before`, or oldest first beyond `max_unused` (registration is open). A
        client in the middle of signing in never goes (one registered since `kept_since`,
        or with a request waiting for its person, or a code not exchanged yet), and those
        count first towards `max_unused`."""
        async with self._engines.write() as conn:
            no_grant = ~exists(select(G.id).where(G.client_id == C.client_id))
            signing_in = or_(
                C.created_at >= kept_since,
                exists(
                    select(Q.request_hash).where(Q.client_id == C.client_id, Q.expires_at > now)
                ),
                exists(
                    select(K.code_hash).where(
                        K.client_id == C.client_id, K.used_at.is_(None), K.expires_at > now
                    )
                ),
            )
            droppable = and_(no_grant, ~signing_in)
            await conn.execute(delete(C).where(droppable, C.created_at < unused_before))
            kept = await conn.scalar(
                select(func.count()).select_from(C).where(no_grant, signing_in)
            )
            room = max(0, max_unused - 1 - int(kept or 0))
            newest = select(C.client_id).where(droppable).order_by(C.created_at.desc())
            await conn.execute(delete(C).where(droppable, C.client_id.not_in(newest.limit(room))))
            await conn.execute(
                insert(C).values(
                    client_id=client_id,
                    registration=registration,
                    client_name=client_name,
                    created_at=now,
                )
            )

    async def client(self, client_id: str) -> tuple[str, str | None] | None:
        """(registration, name) of a client."""
        async with self._engines.reader.connect() as conn:
            row = (
                await conn.execute(
                    select(C.registration, C.client_name).where(C.client_id == client_id)
                )
            ).first()
        return None if row is None else (row.registration, row.client_name)

    # -- authorization requests and one-time sign-in codes --------------------------------------

    async def add_request(
        self, request_hash: str, request: RequestRow, now: float, expires_at: float, per_client: int
    ) -> None:
        """A request waiting for its person; a client's oldest beyond `per_client` go."""
        async with self._engines.write() as conn:
            await conn.execute(delete(Q).where(Q.expires_at <= now))
            keep = (
                select(Q.request_hash)
                .where(Q.client_id == request.client_id)
                .order_by(Q.created_at.desc())
                .limit(max(0, per_client - 1))
            )
            await conn.execute(
                delete(Q).where(Q.client_id == request.client_id, Q.request_hash.not_in(keep))
            )
            await conn.execute(
                insert(Q).values(
                    request_hash=request_hash,
                    created_at=now,
                    expires_at=expires_at,
                    **request.__dict__,
                )
            )

    async def request(self, request_hash: str, now: float) -> RequestRow | None:
        async with self._engines.reader.connect() as conn:
            row = (
                await conn.execute(
                    select(Q).where(Q.request_hash == request_hash, Q.expires_at > now)
                )
            ).first()
        return None if row is None else _request_row(row)

    async def take_request(self, request_hash: str, now: float) -> RequestRow | None:
        """The request, removed: it is answered once."""
        async with self._engines.write() as conn:
            return await _take_request(conn, request_hash, now)

    async def add_login_code(
        self,
        code_hash: str,
        agent_id: str,
        role: str,
        now: float,
        expires_at: float,
        projects: str | None = None,
    ) -> None:
        async with self._engines.write() as conn:
            await conn.execute(delete(L).where(L.expires_at <= now))
            await conn.execute(
                insert(L).values(
                    code_hash=code_hash,
                    agent_id=agent_id,
                    role=role,
                    created_at=now,
                    expires_at=expires_at,
                    projects=projects,
                )
            )

    async def take_login_code(
        self, code_hash: str, now: float
    ) -> tuple[str, str, str | None] | None:
        """(agent, role, projects) of a live one-time code, which is gone from then on."""
        async with self._engines.write() as conn:
            row = (await conn.execute(select(L).where(L.code_hash == code_hash))).first()
            if row is None:
                return None
            await conn.execute(delete(L).where(L.code_hash == code_hash))
        return None if row.expires_at <= now else (row.agent_id, row.role, row.projects)

    # -- authorization codes ---------------------------------------------------------------------

    async def add_code(
        self,
        code_hash: str,
        request_hash: str,
        agent_id: str,
        role: str,
        agent_token_hash: str | None,
        now: float,
        expires_at: float,
        projects: str | None = None,
    ) -> RequestRow | None:
        """Answer a waiting request with a code, in one transaction: the request is
        removed and the code stored; None (nothing stored) when the request is gone."""
        async with self._engines.write() as conn:
            request = await _take_request(conn, request_hash, now)
            if request is None:
                return None
            await conn.execute(delete(K).where(K.expires_at <= now))
            await conn.execute(
                insert(K).values(
                    code_hash=code_hash,
                    client_id=request.client_id,
                    agent_id=agent_id,
                    role=role,
                    agent_token_hash=agent_token_hash,
                    redirect_uri=request.redirect_uri,
                    redirect_uri_explicit=request.redirect_uri_explicit,
                    code_challenge=request.code_challenge,
                    scopes=request.scopes,
                    resource=request.resource,
                    expires_at=expires_at,
                    projects=projects,
                )
            )
        return request

    async def code(self, code_hash: str) -> CodeRow | None:
        async with self._engines.reader.connect() as conn:
            row = (await conn.execute(select(K).where(K.code_hash == code_hash))).first()
        if row is None:
            return None
        return CodeRow(
            row.client_id,
            row.agent_id,
            row.role,
            row.agent_token_hash,
            row.redirect_uri,
            row.redirect_uri_explicit,
            row.code_challenge,
            row.scopes,
            row.resource,
            row.expires_at,
            row.used_at,
            row.grant_id,
            row.projects,
        )

    async def redeem_code(
        self, code_hash: str, now: float, tokens: list[NewToken], per_agent: int
    ) -> tuple[int, int] | None:
        """Use a code once: mark it used, make its grant and the grant's first tokens, and
        end the agent's oldest grants beyond `per_agent`, in one transaction. None (nothing
        written) when the code is unknown, used, expired, or the bearer token it was
        signed in with is gone. Returns the grant's id and how many older grants ended."""
        async with self._engines.write() as conn:
            await _drop_expired_tokens(conn, now)
            row = (
                await conn.execute(
                    select(K).where(
                        K.code_hash == code_hash, K.used_at.is_(None), K.expires_at > now
                    )
                )
            ).first()
            if row is None or not await _signed_in_token_alive(conn, row.agent_token_hash):
                return None
            grant_id = (
                await conn.execute(
                    insert(G)
                    .values(
                        client_id=row.client_id,
                        agent_id=row.agent_id,
                        role=row.role,
                        agent_token_hash=row.agent_token_hash,
                        scopes=row.scopes,
                        resource=row.resource,
                        created_at=now,
                        projects=row.projects,
                    )
                    .returning(G.id)
                )
            ).scalar_one()
            await conn.execute(
                update(K).where(K.code_hash == code_hash).values(used_at=now, grant_id=grant_id)
            )
            await _add_tokens(conn, grant_id, now, tokens)
            ended = await _end_grants_beyond(conn, row.agent_id, per_agent)
        return int(grant_id), ended

    # -- tokens ----------------------------------------------------------------------------------

    async def token(self, token_hash: str, kind: str) -> TokenView | None:
        """A token of a live grant (expired or used ones too: the caller decides)."""
        query = (
            select(
                T.grant_id,
                T.expires_at,
                T.used_at,
                G.client_id,
                G.agent_id,
                G.role,
                G.scopes,
                G.resource,
                G.projects,
            )
            .join(G, G.id == T.grant_id)
            .where(T.token_hash == token_hash, T.kind == kind, _alive())
        )
        async with self._engines.reader.connect() as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else _token_view(row)

    async def rotate(self, refresh_hash: str, now: float, tokens: list[NewToken]) -> int | None:
        """Use a refresh token once: mark it used and give its grant new tokens, in one
        transaction; None when it is unknown, used, expired or its grant is not alive."""
        async with self._engines.write() as conn:
            await _drop_expired_tokens(conn, now)
            grant_id = (
                await conn.execute(
                    select(T.grant_id)
                    .join(G, G.id == T.grant_id)
                    .where(
                        T.token_hash == refresh_hash,
                        T.kind == "refresh",
                        T.used_at.is_(None),
                        T.expires_at > now,
                        _alive(),
                    )
                )
            ).scalar()
            if grant_id is None:
                return None
            await conn.execute(update(T).where(T.token_hash == refresh_hash).values(used_at=now))
            await _add_tokens(conn, grant_id, now, tokens)
        return int(grant_id)

    async def end_grant(self, grant_id: int) -> None:
        """The grant and every token of it."""
        async with self._engines.write() as conn:
            await conn.execute(delete(T).where(T.grant_id == grant_id))
            await conn.execute(delete(G).where(G.id == grant_id))

    async def end_agent(self, agent_id: str) -> int:
        """Every grant of the agent (and their tokens), its codes not yet exchanged and its
        one-time sign-in codes; returns how many grants and codes there were."""
        async with self._engines.write() as conn:
            grants = select(G.id).where(G.agent_id == agent_id)
            await conn.execute(delete(T).where(T.grant_id.in_(grants)))
            ended = (await conn.execute(delete(G).where(G.agent_id == agent_id))).rowcount or 0
            pending = await conn.execute(
                delete(K).where(K.agent_id == agent_id, K.used_at.is_(None))
            )
            codes = await conn.execute(delete(L).where(L.agent_id == agent_id))
        return ended + (pending.rowcount or 0) + (codes.rowcount or 0)

    async def count_grants(self, agent_id: str | None = None) -> int:
        query = select(func.count()).select_from(G)
        if agent_id is not None:
            query = query.where(G.agent_id == agent_id)
        async with self._engines.reader.connect() as conn:
            return int(await conn.scalar(query) or 0)


def _request_row(row: Row[Any]) -> RequestRow:
    return RequestRow(
        row.client_id,
        row.redirect_uri,
        row.redirect_uri_explicit,
        row.code_challenge,
        row.state,
        row.scopes,
        row.resource,
    )


async def _take_request(conn: AsyncConnection, request_hash: str, now: float) -> RequestRow | None:
    row = (await conn.execute(select(Q).where(Q.request_hash == request_hash))).first()
    if row is None:
        return None
    await conn.execute(delete(Q).where(Q.request_hash == request_hash))
    return None if row.expires_at <= now else _request_row(row)


async def _end_grants_beyond(conn: AsyncConnection, agent_id: str, keep: int) -> int:
    """End the agent's grants but its `keep` newest (ids grow: AUTOINCREMENT)."""
    newest = select(G.id).where(G.agent_id == agent_id).order_by(G.id.desc()).limit(keep)
    older = select(G.id).where(G.agent_id == agent_id, G.id.not_in(newest))
    await conn.execute(delete(T).where(T.grant_id.in_(older)))
    ended = await conn.execute(delete(G).where(G.id.in_(older)))
    return ended.rowcount or 0


async def _signed_in_token_alive(conn: AsyncConnection, agent_token_hash: str | None) -> bool:
    if agent_token_hash is None:
        return True
    found = await conn.scalar(select(A.id).where(A.token_hash == agent_token_hash))
    return found is not None


async def _add_tokens(
    conn: AsyncConnection, grant_id: int, now: float, tokens: list[NewToken]
) -> None:
    await conn.execute(
        insert(T),
        [
            {
                "token_hash": token.token_hash,
                "grant_id": grant_id,
                "kind": token.kind,
                "created_at": now,
                "expires_at": token.expires_at,
            }
            for token in tokens
        ],
    )


async def _drop_expired_tokens(conn: AsyncConnection, now: float) -> None:
    """Expired tokens, then grants left with none (their refresh tokens all expired)."""
    await conn.execute(delete(T).where(T.expires_at <= now))
    await conn.execute(delete(G).where(~exists(select(T.token_hash).where(T.grant_id == G.id))))


__all__ = ["CodeRow", "NewToken", "OAuthStore", "RequestRow", "TokenView"]
