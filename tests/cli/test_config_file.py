"""One settings file configures the server and the hooks alike (flags > env > file >
defaults), and `memory-mcp doctor` shows what each would use and flags mismatches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.errors import InvalidInputError
from memory_mcp.hooks.runner import main as hook_main
from memory_mcp.settings import Settings
from tests.conftest import opened
from tests.hooks.test_hooks import write_transcript

CONFIG = Path(__file__).resolve().parents[2] / "config"


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The settings file's folder, under tmp_path (the environment is hermetic already)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "config" / "memory-mcp"
    folder.mkdir(parents=True)
    return folder


def write_config(folder: Path, tmp_path: Path, agent: str = "from-file") -> Path:
    path = folder / "config.toml"
    path.write_text(
        f'agent_id = "{agent}"\ndb = "{tmp_path / "team.db"}"\n'
        f'memory_dir = "{tmp_path / "notes"}"\nmax_memories_per_agent = 77\n'
    )
    return path


def test_precedence_is_flags_then_env_then_file_then_defaults(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(config_dir, tmp_path)
    assert Settings().agent_id == "from-file"
    assert Settings().max_memories_per_agent == 77
    assert Settings().role.value == "worker", "not in the file: the default"
    monkeypatch.setenv("MEMORY_MCP_AGENT_ID", "from-env")
    assert Settings().agent_id == "from-env"
    assert Settings(agent_id="from-flag").agent_id == "from-flag"
    assert Settings(agent_id="from-flag").max_memories_per_agent == 77, "the rest still read"


def test_each_kind_of_setting_comes_from_its_variable(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a MEMORY_MCP_* variable gives (settings.environment_values): a name in any
    case, a number, a flag, a path, a secret, a list as JSON; and a bad value is an error
    naming the setting, not a default."""
    variables = {
        "memory_mcp_agent_id": "lower-case-name",
        "MEMORY_MCP_PORT": "9001",
        "MEMORY_MCP_WATCH": "false",
        "MEMORY_MCP_DATA_DIR": str(config_dir / "data"),
        "MEMORY_MCP_TOKEN": "t-123",
        "MEMORY_MCP_ALLOWED_HOSTS": '["memory.example.com", "10.0.0.5"]',
        "MEMORY_MCP_NOT_A_SETTING": "ignored",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.agent_id == "lower-case-name"
    assert (settings.port, settings.watch, settings.data_dir) == (9001, False, config_dir / "data")
    assert settings.token is not None and settings.token.get_secret_value() == "t-123"
    assert settings.allowed_hosts == ["memory.example.com", "10.0.0.5"]
    monkeypatch.setenv("MEMORY_MCP_ALLOWED_HOSTS", "memory.example.com")
    with pytest.raises(InvalidInputError, match="MEMORY_MCP_ALLOWED_HOSTS.*JSON list"):
        Settings()
    monkeypatch.delenv("MEMORY_MCP_ALLOWED_HOSTS")
    monkeypatch.setenv("MEMORY_MCP_PORT", "not-a-port")
    with pytest.raises(ValidationError, match="port"):
        Settings()


def test_memory_mcp_config_points_elsewhere_and_a_typo_there_is_an_error(
    config_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = write_config(tmp_path, tmp_path, agent="elsewhere")
    monkeypatch.setenv("MEMORY_MCP_CONFIG", str(other))
    assert Settings().agent_id == "elsewhere"
    monkeypatch.setenv("MEMORY_MCP_CONFIG", str(tmp_path / "typo.toml"))
    assert main(["purge"]) == 1
    assert "MEMORY_MCP_CONFIG" in capsys.readouterr().err
    (config_dir / "config.toml").write_text("agent_id = [unclosed\n")
    monkeypatch.delenv("MEMORY_MCP_CONFIG")
    assert main(["purge"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_the_hooks_read_the_same_file_as_the_server(config_dir: Path, tmp_path: Path) -> None:
    """The shipped hooks config sets no agent id: the file gives it to the hooks too, so
    a session's summary lands under the agent the server serves, not under `default`."""
    write_config(config_dir, tmp_path, agent="claude-code")
    transcript = tmp_path / "s1.jsonl"
    write_transcript(transcript)
    stop = {"session_id": "s1", "transcript_path": str(transcript), "hook_event_name": "Stop"}
    assert hook_main(["stop"], json.dumps(stop).encode(), watchdog=False, open_app=open_app) == 0

    async def owners() -> list[str]:
        async with opened(Settings()) as app:  # what `memory-mcp serve` would open
            assert app.caller.agent_id == "claude-code"
            return [r.agent_id async for r in app.service.store.iter_records()]

    owned = anyio.run(owners)  # the summary and the messages captured
    assert len(owned) > 1 and set(owned) == {"claude-code"}


def test_doctor_agrees_with_the_shipped_configs(
    config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "config.toml").write_text((CONFIG / "config.toml").read_text())
    hooks = ["--hooks-config", str(CONFIG / "claude_code_hooks.json")]
    for client in ("mcp.json", "claude_desktop_config.json"):
        assert main(["doctor", "--mcp-config", str(CONFIG / client), *hooks]) == 0
        out = capsys.readouterr().out
        assert "ok: the server and the hooks agree" in out
        agent_row = next(line for line in out.splitlines() if line.startswith("agent_id"))
        assert agent_row.count("claude-code  [config file]") == 2, agent_row
        assert "no store yet" in out
        assert "all-MiniLM-L6-v2 installed" in out
    assert not (tmp_path / "data").exists(), "the doctor creates nothing"


def test_doctor_finds_the_model_without_torch(
    config_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch and sentence-transformers are an optional extra: an install without them has
    everything the server runs, and the doctor says so."""
    for module in ("torch", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    (config_dir / "config.toml").write_text((CONFIG / "config.toml").read_text())
    hooks = ["--hooks-config", str(CONFIG / "claude_code_hooks.json")]
    assert main(["doctor", "--mcp-config", str(CONFIG / "mcp.json"), *hooks]) == 0
    assert "all-MiniLM-L6-v2 installed" in capsys.readouterr().out


def test_doctor_flags_a_server_flag_the_hooks_do_not_share(
    config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(config_dir, tmp_path)
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "memory": {
                        "command": "/opt/memory-mcp/.venv/bin/memory-mcp",
                        "args": ["serve", "--agent-id", "claude-code"],
                        "env": {"MEMORY_MCP_MEMORY_DIR": str(tmp_path / "elsewhere")},
                    }
                }
            }
        )
    )
    assert main(["doctor"]) == 1  # ./.mcp.json is read by default
    out = capsys.readouterr().out
    assert (
        "mismatch: agent_id is claude-code for the server [flag in .mcp.json] but "
        "from-file for the hooks [config file]" in out
    )
    assert "mismatch: memory_dir" in out
    assert "env MEMORY_MCP_MEMORY_DIR in .mcp.json" in out
    assert "mismatch: db" not in out


def test_doctor_says_whether_the_store_opens(
    config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(config_dir, tmp_path)
    (tmp_path / "in.jsonl").write_text("")
    assert main(["import", str(tmp_path / "in.jsonl")]) == 0
    capsys.readouterr()
    assert main(["doctor"]) == 0
    assert f"opens: {tmp_path / 'team.db'}, 0 memories" in capsys.readouterr().out
    (tmp_path / "bad.db").write_text("not a database\n" * 100)
    assert main(["doctor", "--db", str(tmp_path / "bad.db")]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM store (server)" in out
    assert "mismatch: db" in out


def test_doctor_flags_hooks_whose_env_disagrees_with_the_settings_file(
    config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(config_dir, tmp_path)
    settings = json.loads((CONFIG / "claude_code_hooks.json").read_text())
    session_end = settings["hooks"]["SessionEnd"][0]["hooks"][0]
    session_end["command"] = "MEMORY_MCP_AGENT_ID=me " + session_end["command"]
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    assert main(["doctor"]) == 1  # ./.claude/settings.json is read by default
    out = capsys.readouterr().out
    assert (
        "mismatch: agent_id is from-file for the server [config file] but me for the "
        "hooks [env MEMORY_MCP_AGENT_ID in .claude/settings.json]" in out
    )
    assert "the memory-mcp hooks set different MEMORY_MCP_* variables" in out
