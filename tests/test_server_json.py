"""The release's descriptions of itself agree: server.json (the official MCP registry's
entry) validates against the registry's schema 2025-12-11, vendored in tests/data (the
registry repository's internal/validators/schemas/2025-12-11.json, published at its
`$id`); its version, the package's, the Claude Code plugin's and the versions the plugin
starts are one; the README carries the `mcp-name:` line by which PyPI ownership is proven."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memory_mcp import __version__

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "data" / "server.schema-2025-12-11.json"
PLUGIN = ROOT / "plugins" / "memory-mcp"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def validator() -> jsonschema.Draft7Validator:
    schema = load(SCHEMA)
    return jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def project() -> dict[str, Any]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(pyproject["project"])


def project_name() -> str:
    return str(project()["name"])


def test_server_json_validates_against_the_vendored_schema() -> None:
    server = load(ROOT / "server.json")
    assert server["$schema"] == load(SCHEMA)["$id"]
    validator().validate(server)


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s.update(description="x" * 101),
        lambda s: s.update(name="memory-mcp"),
        lambda s: s["packages"][0].update(version="latest"),
        lambda s: s["remotes"][0].update(url="{host}/mcp"),
    ],
    ids=["long-description", "name-without-namespace", "latest", "url-without-scheme"],
)
def test_the_schema_refuses_what_the_registry_refuses(damage: Any) -> None:
    """The validation can fail: the same file, damaged, is refused."""
    server = copy.deepcopy(load(ROOT / "server.json"))
    damage(server)
    assert list(validator().iter_errors(server))


def test_every_version_is_the_package_version() -> None:
    server = load(ROOT / "server.json")
    (package,) = server["packages"]
    assert server["version"] == package["version"] == __version__
    assert (package["registryType"], package["runtimeHint"]) == ("pypi", "uvx")
    assert package["identifier"] == project_name()
    assert server["name"].startswith("io.github.") and server["name"].endswith("/memory-mcp")
    assert load(PLUGIN / ".claude-plugin" / "plugin.json")["version"] == __version__
    # What the plugin runs is the published package's own command, at this version.
    pinned = f"{project_name()}@{__version__}"
    server = load(PLUGIN / ".mcp.json")["mcpServers"]["memory"]
    assert server["args"] == ["--quiet", pinned, "serve"]
    # Python writes the bytecode of what the server imports at its first start, also where
    # the user's environment says not to: later starts read it instead of compiling again
    # (packaging/README.md: why not uv's --compile-bytecode).
    assert server["env"] == {"PYTHONDONTWRITEBYTECODE": ""}
    commands = [
        hook["command"]
        for groups in load(PLUGIN / "hooks" / "hooks.json")["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    ]
    events = ["post-tool-use", "session-start", "user-prompt", "pre-compact", "session-end"]
    assert commands == [f"uvx --quiet {pinned} hook {event}" for event in events], commands


def test_the_package_provides_the_command_named_like_it() -> None:
    """`uvx memory-mcp-kit` (and the registry's `runtimeHint: uvx`) runs the executable
    named like the package: the same command as `memory-mcp`."""
    scripts = project()["scripts"]
    assert scripts[project_name()] == scripts["memory-mcp"] == "memory_mcp.cli.main:main"


def test_the_readme_names_the_registry_entry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {load(ROOT / 'server.json')['name']}" in readme
