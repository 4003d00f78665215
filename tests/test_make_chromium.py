"""`make install-dev` on a machine without Chromium: Debian's package through apt-get where
that can run (root), else one line saying what to install. It used to run apt-get
whatever the machine, failing inside apt without root or off Debian. `.ci/need-chromium`
runs here with a PATH of its own; `apt-get`, `id` and `chromium` on it are FAKES (shell
scripts that record their calls): the machine's own are never touched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "need-chromium"


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def machine(tmp_path: Path, uid: int, apt: bool, chromium: bool) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake(bin_dir, "id", f"echo {uid}")
    if apt:  # FAKE apt-get: records its arguments; `install` puts a FAKE chromium on PATH
        chromium_body = "#!/bin/sh\\nexit 0"
        install = f'printf "{chromium_body}" > {bin_dir}/chromium; chmod +x {bin_dir}/chromium'
        fake(
            bin_dir,
            "apt-get",
            f'echo "$@" >> {calls}\n[ "$1" = install ] && {{ {install}; }}\nexit 0',
        )
    if chromium:
        fake(bin_dir, "chromium", "exit 0")
    return bin_dir


def run(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": os.environ["HOME"]}
    return subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)


def apt_calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_chromium_present_does_nothing(tmp_path: Path) -> None:
    done = run(machine(tmp_path, uid=0, apt=True, chromium=True))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert apt_calls(tmp_path) == []


def test_root_on_debian_installs_it(tmp_path: Path) -> None:
    bin_dir = machine(tmp_path, uid=0, apt=True, chromium=False)
    done = run(bin_dir)
    assert done.returncode == 0, done.stderr
    assert apt_calls(tmp_path) == ["update -qq", "install -y -qq chromium"]
    assert (bin_dir / "chromium").exists()


def test_without_root_it_says_what_to_install(tmp_path: Path) -> None:
    done = run(machine(tmp_path, uid=1000, apt=True, chromium=False))
    assert done.returncode == 1
    assert apt_calls(tmp_path) == []  # apt-get would only fail without root
    (line,) = done.stderr.splitlines()
    assert "sudo apt-get install chromium" in line
    assert done.stdout == ""


def test_off_debian_it_says_what_to_install(tmp_path: Path) -> None:
    done = run(machine(tmp_path, uid=0, apt=False, chromium=False))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "the browser test needs Chromium" in line
    assert "sudo dnf install chromium" in line and "brew install --cask chromium" in line
