"""The package's shape, parsed from its own imports: a folder for each way in (the edges),
edges that do not import each other (but for the hand-offs named below), a core that
never calls an edge, SQL in store/ only, the MCP SDK in the MCP edges only, no circle among
the imports that run, and bench/ never imported. Each rule is a function over a package
folder, so `test_each_rule_catches_a_planted_violation` can run it on a copy with one
violation planted."""

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
# Anything two edges share otherwise lives below both (app/binding.py, app/team_client.py,
# results/, limits.py).
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
SDK_USERS = ("memory_mcp.mcp", "memory_mcp.http", "memory_mcp.app.team_client")
# A module may be as long as its one job needs; past this it likely holds more than one,
# and one that does not says why in its docstring, in words with "over 500 lines".
MAX_LINES = 500
# Who may run-import the composition root (app/root.py) or the service itself: the
# commands and the hooks' entry, which open the app. The servers and the tools are handed
# the open app (app/context.py) and name the service's type under TYPE_CHECKING only, so
# starting them loads neither the store, the model nor the search.
APP_OPENERS = ("memory_mcp.cli", "memory_mcp.hooks.__main__")
APP_ROOT = ("memory_mcp.app.root", "memory_mcp.rules.service")
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


def imports_of(path: Path, *, running: bool = False) -> set[str]:
    """Every name a module imports, inside functions and TYPE_CHECKING too (`running`:
    leave out those under `if TYPE_CHECKING:`, which never run):
    `from a.b import c` gives both `a.b` and `a.b.c` (c may be a module)."""
    names: set[str] = set()
    tree = ast.parse(path.read_text())
    type_only = _type_only(tree) if running else set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _type_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside `if TYPE_CHECKING:` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for sub in node.body:
                skip.update(id(inner) for inner in ast.walk(sub))
    return skip


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
    # app/root.py, the composition root, builds the engines' URL with SQLAlchemy's make_url.
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if not within(name, ("memory_mcp.store", "memory_mcp.app.root"))
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


def import_circles(modules: Modules) -> list[str]:
    """A circle among the imports that run (../shared/tools/house.py counts the same)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for target in imports_of(path, running=True):
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

    for name in sorted(graph):
        chain(name)
    return [f"a circle through {name}" for name in sorted(set(circles))]


def edges_naming_the_service(modules: Modules) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if edge_of(name) is not None and not within(name, APP_OPENERS)
        for target in imports_of(path, running=True)
        if within(target, APP_ROOT)
    )


def long_modules(modules: Modules) -> list[str]:
    """The modules over MAX_LINES whose docstring does not say why."""
    return sorted(
        f"{name}: {lines} lines, and its docstring does not say why (over {MAX_LINES} lines: ...)"
        for name, path in modules.items()
        if (lines := len((text := path.read_text()).splitlines())) > MAX_LINES
        and f"over {MAX_LINES} lines" not in (ast.get_docstring(ast.parse(text)) or "").lower()
    )


def bench_imports(modules: Modules) -> list[str]:
    # bench/ is a project of its own beside the package (bench/pyproject.toml), depending on
    # it: the package imports none of it.
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


def test_the_imports_that_run_have_no_circle() -> None:
    assert import_circles(modules_in(PACKAGE)) == []


def test_only_the_commands_and_the_hooks_entry_open_the_app() -> None:
    assert edges_naming_the_service(modules_in(PACKAGE)) == []


def test_a_module_over_500_lines_says_why() -> None:
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
        "from memory_mcp.rules.service import MemoryService\n",
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
        "memory_mcp/mcp/leak.py",
        "from memory_mcp.rules.service import MemoryService\n",
        lambda package: edges_naming_the_service(modules_in(package)),
    ),
    (
        "memory_mcp/web/leak.py",
        "def f() -> None:\n    from memory_mcp.app.root import open_app\n",
        lambda package: edges_naming_the_service(modules_in(package)),
    ),
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
        assert all("leak" in line for line in found), found


def test_a_planted_circle_is_caught(tmp_path: Path) -> None:
    """Two modules importing each other at run time are a circle; the same import under
    TYPE_CHECKING never runs and is not."""
    shutil.copytree(PACKAGE, tmp_path / "memory_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    package = tmp_path / "memory_mcp"
    (package / "leak.py").write_text("from memory_mcp import leak_back\n")
    (package / "leak_back.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from memory_mcp import leak\n"
    )
    assert import_circles(modules_in(package)) == []
    (package / "leak_back.py").write_text("def f() -> None:\n    from memory_mcp import leak\n")
    found = import_circles(modules_in(package))
    assert found, "the circle was not caught"
    assert all("leak" in line for line in found), found


def test_one_component_owns_the_vectors() -> None:
    """The vector backends (search/ports.py's VectorSearch: the numpy index, pgvector) are
    picked only by the composition root and reached only through the Vectors it builds
    (semantic/vectors.py), and the store's vector statements only by them, so a new
    vector backend is one class and one choice in app/root.py (or, for one a database
    runs itself, its Dialect's `vector_search`: store/dialect.py)."""
    owners = {
        "memory_mcp.semantic.vector_index": {
            "memory_mcp.semantic.in_process_index",  # the in-process backend
            "memory_mcp.semantic.quantised_index",  # a big store's index: the same mask
        },
        # The backends: the composition root picks one; pgvector through PostgreSQL's
        # Dialect (which also fills pgvector's copy of the vectors when a store opens, or
        # a copy from SQLite ends).
        "memory_mcp.semantic.in_process_index": {"memory_mcp.app.root"},
        "memory_mcp.store.postgres.pgvector_search": {
            "memory_mcp.store.postgres.dialect",  # PostgreSQL's Dialect names it
        },
        "memory_mcp.semantic.quantised_index": {
            "memory_mcp.semantic.in_process_index",
            "memory_mcp.semantic.index_file",  # persisting it beside the store
        },
        "memory_mcp.semantic.index_file": {"memory_mcp.semantic.in_process_index"},
        "memory_mcp.store.stored_vectors": {
            "memory_mcp.semantic.in_process_index",
            "memory_mcp.store.dialect",  # the type a Dialect's `stored_vectors` makes
            "memory_mcp.store.sqlite.dialect",  # SQLite's Dialect names it
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
        if name == "memory_mcp.rules.service":
            continue
        tree = ast.parse(path.read_text())
        reaching = [node.lineno for node in ast.walk(tree) if _reaches_into_the_store(node)]
        assert reaching == [], f"{name} uses service.store at lines {reaching}"


def test_importers_only_turn_files_into_import_lines() -> None:
    """Another server's file reaches the store only through the checked import path
    (jsonl.MemoryLine -> cli/imports.py), never by a side door."""
    allowed = (
        "memory_mcp.transfer.importers",
        "memory_mcp.transfer.jsonl",
        "memory_mcp.checks.validation",
        "memory_mcp.errors",
        "memory_mcp.graph.entities",  # the reference graph's shapes: no store, no service
    )
    for name, path in modules_in(PACKAGE).items():
        if not within(name, ("memory_mcp.transfer.importers",)):
            continue
        bad = {i for i in imports_of(path) if i.startswith("memory_mcp") and not within(i, allowed)}
        assert not bad, f"{name} imports {bad}"
