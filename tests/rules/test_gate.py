"""The gate (memory_mcp/rules/gate.py): one memory-store decides permission once and reads
the rules' clock once, and the rules hand the semantic layer nothing of theirs to call. On
a real SQLite file; the embedder is FAKE (the test is about the write's plumbing)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from memory_mcp.models import Caller, NewMemory, Role, Scope, StoreRequest
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Origin
from memory_mcp.semantic.vectors import Vectors, WriteEmbedding
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened

pytestmark = pytest.mark.anyio

LEAD = Caller("lead", Role.LEAD, "s-lead")
WORKER = Caller("w1", Role.WORKER, "s-w1")


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The key of every write decision asked (permissions.check_write)."""
    asked: list[str] = []
    check_write = permissions.check_write

    def spy(caller: Caller, new: NewMemory, origin: Origin = Origin.CALLER) -> bool:
        asked.append(new.key)
        return check_write(caller, new, origin)

    monkeypatch.setattr(permissions, "check_write", spy)
    return asked


async def test_a_memory_store_decides_once_and_reads_the_clock_once(
    make_settings: Callable[..., Settings], decisions: list[str]
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        service = app.service
        await service.store_memory(app.caller, StoreRequest("deploys", "Deploys run on Fridays"))
        reads: list[float] = []

        def clock() -> float:
            reads.append(2e9)
            return 2e9

        service.clock = clock
        decisions.clear()
        outcome, check = await service.store_and_check(
            app.caller, StoreRequest("deploys-2", "Deploys run on Fridays at noon", ttl_seconds=60)
        )
        assert decisions == ["deploys-2"]
        assert len(reads) == 1
        # The one time is the write's, its expiry's and the check's.
        assert outcome.record.updated_at == 2e9
        assert outcome.record.expires_at == 2e9 + 60
        assert check.checked


async def test_a_refused_store_is_decided_once_and_writes_nothing(
    make_settings: Callable[..., Settings], decisions: list[str]
) -> None:
    """A worker's store over the lead's swarm memory: the one decision refuses it, in the
    words that name the owner, and the store is left as it was."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        service = app.service
        first = await service.store_memory(LEAD, StoreRequest("rule", "Two reviewers", Scope.SWARM))
        decisions.clear()
        with pytest.raises(Exception, match="only its owner or the lead may update it"):
            await service.store_and_check(WORKER, StoreRequest("rule", "None", Scope.SWARM))
        assert decisions == ["rule"]
        kept = await service.get(LEAD, first.record.id, count=False)
        assert (kept.value, kept.version) == ("Two reviewers", 1)


def test_the_semantic_layer_takes_no_callable_from_the_rules() -> None:
    """What a write hands the vectors is its text and its time: no callback to run."""
    for function in (Vectors.embedding, WriteEmbedding.beside_write, WriteEmbedding.saving):
        hints: dict[str, Any] = inspect.get_annotations(function)
        assert not [name for name, hint in hints.items() if "Callable" in str(hint)], function
