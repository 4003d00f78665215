"""Memory content is untrusted text. Secrets are refused; text that reads like instructions
to a model is stored but flagged, and the flags travel with it wherever it is shown."""

from __future__ import annotations

import re

from memory_mcp.errors import InvalidInputError

_SECRETS = [
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:ghp|gho|ghs|ghu|ghr|github_pat)_[A-Za-z0-9_]{30,}")),
    ("an API secret key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{32,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
]

_INSTRUCTION_PATTERNS = [
    re.compile(
        r"\b(ignore|disregard|forget)\b.{0,40}\b(previous|prior|above|all|earlier)\b"
        r".{0,40}\b(instructions?|prompts?|rules?|messages?)\b",
        re.I | re.S,
    ),
    re.compile(r"\byou are now\b|\bnew (system )?instructions?\b|\bact as (an? )?\w+", re.I),
    re.compile(r"<\s*/?\s*(system|assistant|instructions?|tool_call|function_calls?)\b", re.I),
    re.compile(r"^\s*(system|assistant)\s*:", re.I | re.M),
    re.compile(r"<\s*/?\s*memories?\b", re.I),
    re.compile(r"\[\s*INST\s*\]|<\|im_start\|>|<\|system\|>", re.I),
]


def refuse_secrets(text: str, field: str = "value") -> None:
    for label, pattern in _SECRETS:
        if pattern.search(text):
            raise InvalidInputError(
                field, f"looks like it contains {label}; secrets are never stored in memory"
            )


def instruction_flags(text: str) -> list[str]:
    """['instruction-like'] when the text tries to steer a model, else []."""
    if any(p.search(text) for p in _INSTRUCTION_PATTERNS):
        return ["instruction-like"]
    return []
