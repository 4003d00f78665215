"""Several memories in one store_memory call (`memories`, the memory-layer seed's batch
upserts): each checked as a single store is, then all written in ONE transaction — all
stored or none — then their texts embedded in one model call, and each answered with its
id, whether it was created, and the memories it closely resembles.

An error names the memory it is about (`memories[3].value`); nothing is written then. Two
memories of the batch with the same key, scope and project are refused: which one would
win is not a question a batch should leave to its order."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, MemoryMcpError
from memory_mcp.models import Caller, NewMemory, StoreRequest, UpsertOutcome
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService
    from memory_mcp.semantic.similar_check import SimilarCheck

log = logging.getLogger(__name__)

MAX_BATCH = 100  # memories in one call


def item_error(index: int, exc: MemoryMcpError) -> MemoryMcpError:
    """`exc` about memory `index` of the batch, saying which one."""
    if isinstance(exc, InvalidInputError):
        return InvalidInputError(f"memories[{index}].{exc.field}", exc.problem)
    return _prefixed(index, exc)


def _prefixed(index: int, exc: MemoryMcpError) -> MemoryMcpError:
    exc.args = (f"memories[{index}]: {exc}",)
    return exc


async def store_batch(
    service: MemoryService, caller: Caller, requests: list[StoreRequest]
) -> list[tuple[UpsertOutcome, SimilarCheck]]:
    """Store `requests` for `caller`, all or none (see the module doc)."""
    if not 1 <= len(requests) <= MAX_BATCH:
        raise InvalidInputError("memories", f"give 1 to {MAX_BATCH} memories, got {len(requests)}")
    now = service.clock()
    prepared: list[tuple[NewMemory, int | None, bool]] = []
    first_of: dict[str, int] = {}
    for index, request in enumerate(requests):
        try:
            # Who shares a task and which memory a correction closes are decided per call
            # (rules/task_agents.py, rules/validity.py): those go one call each.
            if request.task is not None:
                raise InvalidInputError("task", "a task's memories are stored one call each")
            if request.supersedes is not None:
                raise InvalidInputError("supersedes", "a correction is stored one call each")
            new = service.prepare_memory(caller, request)
            expected = _expected_version(request.expected_version)
            permissions.check(caller, Target.written(caller, new), Change.UPDATE)
        except MemoryMcpError as exc:
            raise item_error(index, exc) from None
        earlier = first_of.setdefault(new.identity, index)
        if earlier != index:
            raise InvalidInputError(
                f"memories[{index}].key",
                f"memories[{earlier}] has the same key {new.key!r} in the same scope and "
                "project: store each memory once",
            )
        prepared.append((new, expected, permissions.may_overwrite_others(caller, new)))
    try:
        outcomes = await service.gate.store.upsert_each(prepared, now=now, cap=service.policy.caps)
    except MemoryMcpError as exc:  # the store's own refusals (an owner, a version)
        raise _named_by_key(exc, prepared) from None
    for (new, _, _), outcome in zip(prepared, outcomes, strict=True):
        outcome.redactions = list(new.redactions)
    if service.vectors.embedder.is_ready():
        try:  # one model call for the batch; the background worker retries a failure
            await service.vectors.embed_texts([new.value for new, _, _ in prepared])
        except Exception:
            log.exception("embedding a batch of %d memories failed", len(prepared))
    return [
        (outcome, await service.gate.similar_to(caller, outcome.record, now))
        for outcome in outcomes
    ]


def _expected_version(expected_version: int | None) -> int | None:
    if expected_version is not None and not v.is_whole_number(expected_version, 0):
        raise InvalidInputError(
            "expected_version", f"must be a whole number from 0 to {v.MAX_WHOLE_NUMBER}"
        )
    return expected_version


def _named_by_key(
    exc: MemoryMcpError, prepared: list[tuple[NewMemory, int | None, bool]]
) -> MemoryMcpError:
    """The store's refusal names the key; say which memory of the batch holds it."""
    text = str(exc)
    for index, (new, _, _) in enumerate(prepared):
        if repr(new.key) in text:
            return _prefixed(index, exc)
    return exc


__all__ = ["MAX_BATCH", "store_batch"]
