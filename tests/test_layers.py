"""The layers call one way: edges -> composition -> rules -> storage. Parsed from imports."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TypeGuard

PACKAGE = Path(__file__).parent.parent / "memory_mcp"
EDGES = (
    "memory_mcp.mcp_server",
    "memory_mcp.mcp_browse",
    "memory_mcp.mcp_edge",
    "memory_mcp.http_server",
    "memory_mcp.http_identity",
    "memory_mcp.http_notes",
    "memory_mcp.http_sessions",
    "memory_mcp.tool_results",
    "memory_mcp.cli",
    "memory_mcp.cli_notes",
    "memory_mcp.hooks",
    "memory_mcp.web",
)


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def module_files(prefix: str = "") -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name.startswith(prefix):
            files[name] = path
    return files


def test_store_knows_nothing_above_it() -> None:
    for name, path in module_files("memory_mcp.store").items():
        bad = {
            i
            for i in imports_of(path)
            if i.startswith("memory_mcp.")
            and not (
                i.startswith("memory_mcp.store") or i in ("memory_mcp.models", "memory_mcp.errors")
            )
        }
        assert not bad, f"{name} imports {bad}"
        assert not any(i == "mcp" or i.startswith("mcp.") for i in imports_of(path))


def test_only_the_store_speaks_sql() -> None:
    for name, path in module_files().items():
        if name.startswith("memory_mcp.store") or name == "memory_mcp.app":
            continue
        sql = {i for i in imports_of(path) if i.startswith("sqlalchemy")}
        assert not sql, f"{name} imports {sql}"


def test_rules_never_call_the_edges() -> None:
    for name, path in module_files().items():
        if name.startswith(EDGES):
            continue
        bad = {i for i in imports_of(path) if i.startswith(EDGES)}
        assert not bad, f"{name} imports the edge {bad}"


def test_only_the_mcp_edge_imports_the_sdk() -> None:
    for name, path in module_files().items():
        if name in (
            "memory_mcp.mcp_server",
            "memory_mcp.mcp_browse",
            "memory_mcp.mcp_edge",
            "memory_mcp.http_server",
            "memory_mcp.http_identity",
            "memory_mcp.http_notes",
            "memory_mcp.http_sessions",
            "memory_mcp.hooks.team",
        ):
            continue  # the server edges, and the hooks' client of a team server
        sdk = {i for i in imports_of(path) if i == "mcp" or i.startswith("mcp.")}
        assert not sdk, f"{name} imports the MCP SDK {sdk}"


def test_one_component_owns_the_vectors() -> None:
    """The numpy index and the store's vector statements are reached only through
    memory_mcp/vectors.py (the store builds its StoredVectors), so a second vector
    backend replaces one component."""
    owners = {
        "memory_mcp.vector_index": {"memory_mcp.vectors"},
        "memory_mcp.store.vectors": {
            "memory_mcp.vectors",
            "memory_mcp.store.repository",
            "memory_mcp.store.postgres.vectors",  # its pgvector subclass
        },
    }
    for name, path in module_files().items():
        for owned, allowed in owners.items():
            if owned in imports_of(path):
                assert name in allowed, f"{name} imports {owned}"


def test_the_package_never_imports_the_benchmarks() -> None:
    # bench/ is not installed with the package; only the CLI's `bench` command reaches it.
    for name, path in module_files().items():
        if name == "memory_mcp.cli":
            continue
        bench = {i for i in imports_of(path) if i == "bench" or i.startswith("bench.")}
        assert not bench, f"{name} imports the benchmarks {bench}"


def _reaches_into_the_store(node: ast.AST) -> TypeGuard[ast.Attribute]:
    """`service.store` or `<anything>.service.store`."""
    if not (isinstance(node, ast.Attribute) and node.attr == "store"):
        return False
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name == "service"


def test_nothing_outside_the_service_touches_its_store() -> None:
    for name, path in module_files().items():
        if name == "memory_mcp.service" or name.startswith("memory_mcp.benchmark"):
            continue  # the benchmarks are leaving the package (bench/)
        tree = ast.parse(path.read_text())
        reaching = [node.lineno for node in ast.walk(tree) if _reaches_into_the_store(node)]
        assert reaching == [], f"{name} uses service.store at lines {reaching}"


def test_importers_only_turn_files_into_import_lines() -> None:
    """Another server's file reaches the store only through the checked import path
    (jsonl.MemoryLine -> cli_import), never by a side door."""
    allowed = (
        "memory_mcp.importers",
        "memory_mcp.jsonl",
        "memory_mcp.validation",
        "memory_mcp.errors",
    )
    for name, path in module_files("memory_mcp.importers").items():
        bad = {
            i for i in imports_of(path) if i.startswith("memory_mcp") and not i.startswith(allowed)
        }
        assert not bad, f"{name} imports {bad}"
