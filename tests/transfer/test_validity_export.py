"""An export carries each memory's validity window (rules/validity.py) and an import keeps
it: a corrected memory comes back closed, out of default reads, still readable by id; a
memory stated to hold from an earlier time keeps that time. Real SQLite files; the
embedder is a fake (named so): windows are the point, not meaning."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_mcp.models import Caller, Role, SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.transfer.batches import ImportReport, write_batches
from memory_mcp.transfer.jsonl import export_lines, prepare_lines, read_lines
from tests.conftest import FakeEmbedder, opened

pytestmark = pytest.mark.anyio

ALICE = Caller("alice", Role.WORKER, "s")
MARCH = 1_772_323_200.0  # 2026-03-01


async def test_an_export_and_its_import_keep_the_windows(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    exported = tmp_path / "export.jsonl"
    async with opened(make_settings(), FakeEmbedder()) as app:
        service = app.service
        old = await service.store_memory(
            ALICE, StoreRequest("port", "The gateway port is 8080.", valid_from=MARCH)
        )
        await service.store_memory(
            ALICE, StoreRequest("port-now", "The gateway port is 9090.", supersedes=old.record.id)
        )
        with exported.open("w") as out:
            await export_lines(service.visible_records(ALICE), out)
    lines = {line["key"]: line for line in map(json.loads, exported.read_text().splitlines())}
    assert lines["port"]["valid_from"] == "2026-03-01T00:00:00Z" and lines["port"]["valid_to"]
    assert "valid_to" not in lines["port-now"] and "valid_from" not in lines["port-now"]

    other = make_settings(db=str(tmp_path / "other.db"))
    async with opened(other, FakeEmbedder()) as app:
        service = app.service
        parsed, errors = read_lines(exported)
        prepared, bad = prepare_lines(service, parsed, ALICE)
        assert errors == bad == []
        await write_batches(service, prepared, ImportReport())
        found = await service.search(ALICE, SearchRequest("gateway port"))
        assert [hit.record.key for hit in found.hits] == ["port-now"]
        shown = await service.search(ALICE, SearchRequest("gateway port", include_superseded=True))
        closed = next(hit.record for hit in shown.hits if hit.record.key == "port")
        assert closed.valid_from == MARCH and closed.valid_to is not None
