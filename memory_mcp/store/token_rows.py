"""The `agent_tokens` table: bearer-token hashes and the identity each one stands for.
Hashing, generation and the rules live in memory_mcp/auth/tokens.py; this module only reads
and writes rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, delete, func, insert, select, update

from memory_mcp.store.engine import Engines
from memory_mcp.store.schema import AgentTokenRow

T = AgentTokenRow


@dataclass(frozen=True)
class TokenRow:
    id: int
    agent_id: str
    role: str
    created_at: float
    last_used_at: float | None
    projects: list[str] | None = None  # the projects it is granted; None: every project


def _row(row: Row[Any]) -> TokenRow:
    projects = None if row.projects is None else list(json.loads(row.projects))
    return TokenRow(row.id, row.agent_id, row.role, row.created_at, row.last_used_at, projects)


class TokenStore:
    def __init__(self, engines: Engines) -> None:
        self._engines = engines

    async def add(
        self,
        token_hash: str,
        agent_id: str,
        role: str,
        now: float,
        projects: list[str] | None = None,
    ) -> None:
        async with self._engines.write() as conn:
            await conn.execute(
                insert(T).values(
                    token_hash=token_hash,
                    agent_id=agent_id,
                    role=role,
                    created_at=now,
                    projects=None if projects is None else json.dumps(sorted(projects)),
                )
            )

    async def find(self, token_hash: str) -> TokenRow | None:
        async with self._engines.reader.connect() as conn:
            row = (await conn.execute(select(T).where(T.token_hash == token_hash))).first()
        return _row(row) if row else None

    async def mark_used(self, token_id: int, now: float) -> None:
        async with self._engines.write() as conn:
            await conn.execute(update(T).where(T.id == token_id).values(last_used_at=now))

    async def all(self) -> list[TokenRow]:
        async with self._engines.reader.connect() as conn:
            rows = (await conn.execute(select(T).order_by(T.agent_id, T.id))).all()
        return [_row(r) for r in rows]

    async def revoke(self, agent_id: str) -> int:
        async with self._engines.write() as conn:
            result = await conn.execute(delete(T).where(T.agent_id == agent_id))
        return result.rowcount or 0

    async def revoke_one(self, token_id: int) -> bool:
        async with self._engines.write() as conn:
            result = await conn.execute(delete(T).where(T.id == token_id))
        return bool(result.rowcount)

    async def count(self) -> int:
        async with self._engines.reader.connect() as conn:
            return int(await conn.scalar(select(func.count()).select_from(T)) or 0)


__all__ = ["TokenRow", "TokenStore"]
