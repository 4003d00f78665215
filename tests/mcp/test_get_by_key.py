"""memory-get by key (rules/key_reads.py): the memory the caller may see under a key; a key
that names several (two scopes, two projects) is an error that lists them and names the
argument that picks one. In process, with a fake embedder: this is about the rules."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.settings import Settings
from tests.conftest import call, call_error, client_of

pytestmark = pytest.mark.anyio


async def test_one_memory_under_the_key_is_read_whole(settings: Callable[..., Settings]) -> None:
    async with client_of(settings()) as client:
        stored = await call(client, "store_memory", key="deploy-day", value="Tuesdays")
        read = await call(client, "memory-get", key="deploy-day")
        missing = await call_error(client, "memory-get", key="no-such-key")
    assert (read["id"], read["value"]) == (stored["id"], "Tuesdays")
    assert "no memory with key 'no-such-key' is visible to you" in missing


async def test_a_key_in_two_scopes_is_an_error_naming_both_and_scope_picks_one(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings()) as client:
        mine = await call(client, "store_memory", key="style", value="mine")
        shared = await call(client, "store_memory", key="style", value="ours", scope="swarm")
        error = await call_error(client, "memory-get", key="style")
        picked = await call(client, "memory-get", key="style", scope="swarm")
    assert f"memory {mine['id']} (scope agent" in error
    assert f"memory {shared['id']} (scope swarm" in error
    assert "give scope to pick one" in error
    assert picked["id"] == shared["id"]


async def test_a_key_in_two_projects_is_picked_by_project(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings(project="acme/app")) as client:
        here = await call(client, "store_memory", key="owner", value="Ann")
        everywhere = await call(client, "store_memory", key="owner", value="Bo", project="*")
        error = await call_error(client, "memory-get", key="owner")
        picked = await call(client, "memory-get", key="owner", project="acme/app")
        star = await call(client, "memory-get", key="owner", project="*")
    assert "give project to pick one" in error
    assert (picked["id"], star["id"]) == (here["id"], everywhere["id"])


async def test_another_agents_private_memory_is_not_found_by_key(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings(agent_id="a1")) as client:
        await call(client, "store_memory", key="secret-plan", value="private")
    async with client_of(settings(agent_id="a2")) as client:
        error = await call_error(client, "memory-get", key="secret-plan")
    assert "no memory with key 'secret-plan' is visible to you" in error


async def test_bad_combinations_name_the_argument(settings: Callable[..., Settings]) -> None:
    async with client_of(settings()) as client:
        neither = await call_error(client, "memory-get")
        both = await call_error(client, "memory-get", id=1, key="k")
        scoped_id = await call_error(client, "memory-get", id=1, scope="agent")
        bad_scope = await call_error(client, "memory-get", key="k", scope="everyone")
    assert "invalid id: give id or key" in neither
    assert "invalid id: give id or key" in both
    assert "scope and project go with key" in scoped_id
    assert "scope" in bad_scope
