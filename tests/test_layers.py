"""The package's shape, parsed from its own imports: a folder for each way in (the edges),
edges that do not import each other (but for the hand-offs named below), a core that
never calls an edge, SQL in store/ only, the MCP SDK in the MCP edges only, one module per
name, no module past 500 lines, and bench/ never imported. Each rule is a function over a
package folder, so `test_each_rule_catches_a_planted_violation` can run it on a copy with
one violation planted."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

PACKAGE = Path(__file__).parent.parent / "memory_mcp"

# The ways in, each a folder of its own.
EDGES = ("cli", "mcp", "http", "web", "hooks")
# Where one edge hands the process to another, and the only modules it may reach there:
# the CLI starts the servers and the hooks (cli/launch.py), and hands the team server the
# MCP server and the web view it hosts behind one port (http/team_server.HostedParts); the
# team server's index-note tool is an MCP tool, and its session manager tells the MCP
# identity which session a request is in.
# Anything two edges share otherwise lives below both (binding.py, team_client.py,
# tool_results.py, limits.py).
HANDOFFS = {
    "memory_mcp.cli.launch": (
        "memory_mcp.mcp.server",
        "memory_mcp.http.team_server",
        "memory_mcp.web.ui_server",
        "memory_mcp.hooks.runner",
    ),
    "memory_mcp.http.team_server": ("memory_mcp.mcp.identity",),
    "memory_mcp.http.index_note": ("memory_mcp.mcp.tool_calls", "memory_mcp.mcp.identity"),
    "memory_mcp.http.agent_sessions": ("memory_mcp.mcp.identity",),
}
# The MCP SDK: the MCP edges (the server and its HTTP transports), and the hooks' and the
# CLI's client of a team server.
SDK_USERS = ("memory_mcp.mcp", "memory_mcp.http", "memory_mcp.team_client")
MAX_LINES = 500
# The longest chain of modules importing modules (imports inside functions and under
# TYPE_CHECKING count: ../shared/tools/house.py measures it the same way).
MAX_IMPORT_DEPTH = 12
# Who may import the composition root (app.py) or the service itself: the commands and
# the hooks' entry, which open the app; the servers and the tools are handed it and name
# it through the ports (app_context.py, memory_api.py).
APP_OPENERS = ("memory_mcp.cli", "memory_mcp.hooks.__main__")
# What search/ may import of the store: turning a query into words, no store access.
SEARCH_STORE_TEXT = ("memory_mcp.store.keyword",)

Modules = dict[str, Path]


def modules_in(package: Path) -> Modules:
    """Dotted name -> file, for every module of the package folder."""
    files = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def imports_of(path: Path) -> set[str]:
    """Every name a module imports, inside functions and TYPE_CHECKING too:
    `from a.b import c` gives both `a.b` and `a.b.c` (c may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def edge_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "memory_mcp" and parts[1] in EDGES else None


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def is_sdk(name: str) -> bool:
    return name == "mcp" or name.startswith("mcp.")


# --- the rules: each returns its violations, one line each


def edges_that_are_not_folders(package: Path) -> list[str]:
    missing = [f"{edge}/ is not a package" for edge in EDGES if not (package / edge).is_dir()]
    flat = [
        f"{path.name}: an edge's module outside its folder"
        for path in package.glob("*.py")
        if path.stem.startswith(tuple(f"{edge}_" for edge in EDGES))
    ]
    return missing + flat


def edges_importing_edges(modules: Modules) -> list[str]:
    found = []
    for name, path in modules.items():
        edge = edge_of(name)
        if edge is None:
            continue
        allowed = HANDOFFS.get(name, ())
        for target in imports_of(path):
            other = edge_of(target)
            if other is not None and other != edge and not within(target, allowed):
                found.append(f"{name} imports {target}")
    return sorted(found)


def core_importing_edges(modules: Modules) -> list[str]:
    return sorted(
        f"{name} imports the edge {target}"
        for name, path in modules.items()
        if edge_of(name) is None
        for target in imports_of(path)
        if edge_of(target) is not None
    )


def sql_outside_the_store(modules: Modules) -> list[str]:
    # app.py, the composition root, builds the engines' URL with SQLAlchemy's make_url.
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if not within(name, ("memory_mcp.store", "memory_mcp.app"))
        for target in imports_of(path)
        if target == "sqlalchemy" or target.startswith("sqlalchemy.")
    )


def sdk_outside_the_mcp_edges(modules: Modules) -> list[str]:
    return sorted(
        f"{name} imports the MCP SDK {target}"
        for name, path in modules.items()
        if not within(name, SDK_USERS)
        for target in imports_of(path)
        if is_sdk(target)
    )


def store_reaching_up(modules: Modules) -> list[str]:
    below = ("memory_mcp.store", "memory_mcp.models", "memory_mcp.errors")
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if within(name, ("memory_mcp.store",))
        for target in imports_of(path)
        if (target.startswith("memory_mcp.") and not within(target, below)) or is_sdk(target)
    )


def search_reaching_past_its_ports(modules: Modules) -> list[str]:
    """search/ takes the store and the vectors as the Protocols of search/ports.py, so it
    sits below both: of the store it imports only keyword.py (text to query words), and
    nothing of semantic/."""
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if within(name, ("memory_mcp.search",))
        for target in imports_of(path)
        if within(target, ("memory_mcp.semantic",))
        or (within(target, ("memory_mcp.store",)) and not within(target, SEARCH_STORE_TEXT))
    )


def reads_built_on(modules: Modules) -> list[str]:
    """The reads (reading.py) and the links (linking.py) are MemoryService's mixins side
    by side: only the service builds on the reads; the rule of who may read is
    permissions.can_see, which everyone asks."""
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if name != "memory_mcp.service"
        for target in imports_of(path)
        if within(target, ("memory_mcp.reading",))
    )


def import_depth(modules: Modules) -> list[str]:
    """The longest import chain, if it is longer than MAX_IMPORT_DEPTH, or a circle."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for target in imports_of(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + ".") and "." in target:
                targets.add(target)
        graph[name] = targets
    chains: dict[str, list[str]] = {}
    visiting: set[str] = set()
    circles: list[str] = []

    def chain(name: str) -> list[str]:
        if name in chains:
            return chains[name]
        if name in visiting:
            circles.append(name)
            return []
        visiting.add(name)
        longest = max((chain(target) for target in graph[name]), key=len, default=[])
        visiting.discard(name)
        chains[name] = [name, *longest]
        return chains[name]

    deepest = max((chain(name) for name in sorted(graph)), key=len)
    found = [f"a circle through {name}" for name in sorted(set(circles))]
    if len(deepest) > MAX_IMPORT_DEPTH:
        found.append(f"{len(deepest)} deep: {' -> '.join(deepest)}")
    return found


def edges_naming_the_service(modules: Modules) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if edge_of(name) is not None and not within(name, APP_OPENERS)
        for target in imports_of(path)
        if within(target, ("memory_mcp.app", "memory_mcp.service"))
    )


def shared_names(package: Path) -> list[str]:
    """One module (or package) per name across the whole package."""
    seen: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*")):
        if path.name in ("__init__.py", "__main__.py", "__pycache__") or "__pycache__" in str(path):
            continue
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file()):
            seen.setdefault(path.stem, []).append(str(path.relative_to(package.parent)))
    return sorted(f"{stem}: {', '.join(paths)}" for stem, paths in seen.items() if len(paths) > 1)


def long_modules(modules: Modules) -> list[str]:
    return sorted(
        f"{name}: {lines} lines"
        for name, path in modules.items()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    )


def bench_imports(modules: Modules) -> list[str]:
    # bench/ is not installed with the package: `memory-mcp bench` runs `python -m bench`
    # in a clone, by path, and imports none of it.
    return sorted(
        f"{name} imports the benchmarks {target}"
        for name, path in modules.items()
        for target in imports_of(path)
        if target == "bench" or target.startswith("bench.")
    )


def test_every_edge_is_a_folder() -> None:
    assert edges_that_are_not_folders(PACKAGE) == []


def test_edges_do_not_import_each_other_but_for_the_hand_offs() -> None:
    assert edges_importing_edges(modules_in(PACKAGE)) == []


def test_the_core_never_calls_an_edge() -> None:
    assert core_importing_edges(modules_in(PACKAGE)) == []


def test_only_the_store_speaks_sql() -> None:
    assert sql_outside_the_store(modules_in(PACKAGE)) == []


def test_only_the_mcp_edges_import_the_sdk() -> None:
    assert sdk_outside_the_mcp_edges(modules_in(PACKAGE)) == []


def test_store_knows_nothing_above_it() -> None:
    assert store_reaching_up(modules_in(PACKAGE)) == []


def test_the_search_reaches_the_store_and_vectors_through_its_ports() -> None:
    assert search_reaching_past_its_ports(modules_in(PACKAGE)) == []


def test_only_the_service_builds_on_the_reads() -> None:
    assert reads_built_on(modules_in(PACKAGE)) == []


def test_the_import_graph_is_shallow_and_has_no_circle() -> None:
    assert import_depth(modules_in(PACKAGE)) == []


def test_only_the_commands_and_the_hooks_entry_open_the_app() -> None:
    assert edges_naming_the_service(modules_in(PACKAGE)) == []


def test_no_two_modules_share_a_name() -> None:
    assert shared_names(PACKAGE) == []


def test_no_module_is_over_500_lines() -> None:
    assert long_modules(modules_in(PACKAGE)) == []


def test_the_package_never_imports_the_benchmarks() -> None:
    assert bench_imports(modules_in(PACKAGE)) == []


PLANTED: list[tuple[str, str, Callable[[Path], list[str]]]] = [
    # (file, its text, the rule that must name it)
    (
        "memory_mcp/cli/leak.py",
        "from memory_mcp.mcp.server import build_server\n",
        lambda package: edges_importing_edges(modules_in(package)),
    ),
    (
        "memory_mcp/web/leak.py",
        "from memory_mcp.http.team_server import http_app\n",
        lambda package: edges_importing_edges(modules_in(package)),
    ),
    (
        "memory_mcp/leak.py",
        "from memory_mcp.cli.common import run_with_app\n",
        lambda package: core_importing_edges(modules_in(package)),
    ),
    (
        "memory_mcp/search/leak.py",
        "import sqlalchemy\n",
        lambda package: sql_outside_the_store(modules_in(package)),
    ),
    (
        "memory_mcp/hooks/leak.py",
        "from mcp.server.mcpserver import MCPServer\n",
        lambda package: sdk_outside_the_mcp_edges(modules_in(package)),
    ),
    (
        "memory_mcp/store/leak.py",
        "from memory_mcp.service import MemoryService\n",
        lambda package: store_reaching_up(modules_in(package)),
    ),
    (
        "memory_mcp/search/leak.py",
        "from memory_mcp.store.repository import MemoryStore\n",
        lambda package: search_reaching_past_its_ports(modules_in(package)),
    ),
    (
        "memory_mcp/search/leak.py",
        "def f() -> None:\n    from memory_mcp.semantic.vectors import Vectors\n",
        lambda package: search_reaching_past_its_ports(modules_in(package)),
    ),
    (
        "memory_mcp/leak.py",
        "from memory_mcp.reading import MemoryReads\n",
        lambda package: reads_built_on(modules_in(package)),
    ),
    (
        "memory_mcp/leak.py",
        "def f() -> None:\n    from memory_mcp.cli import __main__\n",
        lambda package: import_depth(modules_in(package)),
    ),
    (
        "memory_mcp/mcp/leak.py",
        "from memory_mcp.service import MemoryService\n",
        lambda package: edges_naming_the_service(modules_in(package)),
    ),
    (
        "memory_mcp/web/leak.py",
        "def f() -> None:\n    from memory_mcp.app import open_app\n",
        lambda package: edges_naming_the_service(modules_in(package)),
    ),
    ("memory_mcp/web/browse.py", "", shared_names),
    ("memory_mcp/leak.py", "x = 1\n" * 501, lambda package: long_modules(modules_in(package))),
    (
        "memory_mcp/leak.py",
        "def f() -> None:\n    from bench import command\n",
        lambda package: bench_imports(modules_in(package)),
    ),
    ("memory_mcp/cli_leak.py", "", edges_that_are_not_folders),
]


def test_each_rule_catches_a_planted_violation(tmp_path: Path) -> None:
    """On a copy of the package with one violation planted, each rule names it, and only
    it: the rest of the copy is the real package, which passes."""
    for index, (file, text, rule) in enumerate(PLANTED):
        root = tmp_path / str(index)
        shutil.copytree(PACKAGE, root / "memory_mcp", ignore=shutil.ignore_patterns("__pycache__"))
        (root / file).write_text(text)
        found = rule(root / "memory_mcp")
        assert found, f"{file} was not caught"
        assert all("leak" in line or "browse" in line for line in found), found


def test_one_component_owns_the_vectors() -> None:
    """The numpy index and the store's vector statements are reached only through
    memory_mcp/semantic/vectors.py (the store builds its StoredVectors), so a second
    vector backend replaces one component."""
    owners = {
        "memory_mcp.semantic.vector_index": {
            "memory_mcp.semantic.vectors",
            "memory_mcp.semantic.in_process_index",  # the search Vectors holds
            "memory_mcp.semantic.quantised_index",  # a big store's index: the same mask
        },
        "memory_mcp.semantic.in_process_index": {"memory_mcp.semantic.vectors"},
        "memory_mcp.semantic.quantised_index": {
            "memory_mcp.semantic.in_process_index",
            "memory_mcp.semantic.index_file",  # persisting it beside the store
        },
        "memory_mcp.semantic.index_file": {"memory_mcp.semantic.in_process_index"},
        "memory_mcp.store.stored_vectors": {
            "memory_mcp.semantic.vectors",
            "memory_mcp.semantic.in_process_index",
            "memory_mcp.store.repository",
            "memory_mcp.store.postgres.pgvector_search",  # its pgvector subclass
        },
    }
    for name, path in modules_in(PACKAGE).items():
        for owned, allowed in owners.items():
            if owned in imports_of(path):
                assert name in allowed, f"{name} imports {owned}"


def _reaches_into_the_store(node: ast.AST) -> TypeGuard[ast.Attribute]:
    """`service.store` or `<anything>.service.store`."""
    if not (isinstance(node, ast.Attribute) and node.attr == "store"):
        return False
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name == "service"


def test_nothing_outside_the_service_touches_its_store() -> None:
    for name, path in modules_in(PACKAGE).items():
        if name == "memory_mcp.service":
            continue
        tree = ast.parse(path.read_text())
        reaching = [node.lineno for node in ast.walk(tree) if _reaches_into_the_store(node)]
        assert reaching == [], f"{name} uses service.store at lines {reaching}"


def test_importers_only_turn_files_into_import_lines() -> None:
    """Another server's file reaches the store only through the checked import path
    (jsonl.MemoryLine -> cli/imports.py), never by a side door."""
    allowed = (
        "memory_mcp.importers",
        "memory_mcp.jsonl",
        "memory_mcp.checks.validation",
        "memory_mcp.errors",
        "memory_mcp.graph_entities",  # the reference graph's shapes: no store, no service
    )
    for name, path in modules_in(PACKAGE).items():
        if not within(name, ("memory_mcp.importers",)):
            continue
        bad = {i for i in imports_of(path) if i.startswith("memory_mcp") and not within(i, allowed)}
        assert not bad, f"{name} imports {bad}"
