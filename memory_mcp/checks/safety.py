"""Secrets never reach the store: redacted where they are data, refused where they name.

Memories are shared, exported and put into prompts, so no field may keep a secret. Where
one is (memory_mcp/checks/secret_scan: gitleaks' rules and a few of our own; chosen and measured
in bench/secret_scanners.py):
- in text that is data (a value, a metadata value, a learning, a note's section, an
  imported memory), the secret's characters are replaced by `[REDACTED:<kind>]` and the
  rest is stored, so the memory is kept; the write's answer lists each redaction (field,
  kind, characters), never the secret;
- in a name (the key, a tag, a metadata key), the write is refused and the error names
  the field and the characters: a name is how a memory is found and updated, and one
  rewritten behind the caller's back would no longer be the name it asked for.

Secrets are looked for in the text as given, before anything folds it (tags are
lower-cased when stored: `AKIA...` would no longer look like an AWS key).

Text that reads like instructions to a model is flagged, not refused: see checks/injection.py."""

from __future__ import annotations

from typing import Any

from memory_mcp.checks.secret_scan import SecretFinding, find_secrets
from memory_mcp.checks.text_safety import strip_terminal_controls
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Redaction

_ADVICE = (
    "secrets are never stored in memory, and a key, tag or metadata key is not redacted "
    "(store where to find the secret instead, e.g. the name of the vault entry)"
)


def marker(kind: str) -> str:
    """What a redacted secret reads as in the stored text."""
    return f"[REDACTED:{kind}]"


def redact_text(text: str) -> tuple[str, list[SecretFinding]]:
    """The text with every secret replaced by its marker, and what was found where (in
    the text as given)."""
    findings = find_secrets(text)
    if not findings:
        return text, []
    parts: list[str] = []
    done = 0
    for f in findings:
        parts += [text[done : f.start], marker(f.kind)]
        done = f.end
    parts.append(text[done:])
    return "".join(parts), findings


def redact_field(text: str, field: str) -> tuple[str, list[Redaction]]:
    """One text field (value, learning), redacted; the redactions name `field`."""
    redacted, findings = redact_text(text)
    return redacted, [Redaction(field, f.kind, f.start, f.end) for f in findings]


def _where(path: str, key: str) -> str:
    return f"{path}.{strip_terminal_controls(key)[:40]}"[:200]


def redact_json(value: Any, path: str, found: list[Redaction]) -> Any:
    """A JSON value (metadata, already size-checked) with the secrets in its strings
    redacted, each appended to `found` with where it was ("metadata.db.url",
    "metadata.hosts[2]"). A key holding a secret is refused: keys are names."""
    if isinstance(value, str):
        redacted, redactions = redact_field(value, path)
        found.extend(redactions)
        return redacted
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, child in value.items():
            refuse_secret_name(key, f"a key of {path}", path.split(".")[0].split("[")[0])
            result[key] = redact_json(child, _where(path, key), found)
        return result
    if isinstance(value, list):
        return [redact_json(child, f"{path}[{i}]", found) for i, child in enumerate(value)]
    return value


def refuse_secret_name(name: str, where: str, field: str) -> None:
    """Refuse a name (key, tag, metadata key) that holds a secret: the error names the
    field, the place and the characters (1-based, inclusive), never the secret."""
    findings = find_secrets(name)
    if findings:
        spots = ", ".join(f"{f.kind} at characters {f.start + 1}-{f.end}" for f in findings)
        place = "" if where == field else f"{where} "
        raise InvalidInputError(field, f"{place}holds a secret ({spots}); {_ADVICE}")


def refuse_secret_names(key: str, tags: list[str]) -> None:
    """The key and every tag, as the caller wrote them (before tags are lower-cased).
    Tags are counted from 1, as the characters are."""
    refuse_secret_name(key, "key", "key")
    for number, tag in enumerate(tags, start=1):
        refuse_secret_name(tag, f"tag {number}", "tags")
