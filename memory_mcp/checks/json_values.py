"""A memory's value as given: text, or a JSON object or array (RFC-0015's "value:
JSON-serializable data"). An object or array is stored as compact JSON text in the same
`value` column and marked (`value_json`), so that it comes back as it was given, typed,
while a string that happens to read as JSON stays a string.

Stored as text, a JSON value is searched as any value is: its keys and string leaves are
words of the text (the keyword index splits on the punctuation) and the model reads the
same text for its vector. The size limit applies to that text. Secrets are redacted leaf by
leaf (as metadata's are: `value.db.url`), so that a redaction never breaks the JSON; a key
that holds a secret is refused."""

from __future__ import annotations

import json
from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.safety import redact_field, redact_json
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import JsonValue, Redaction


def encoded(value: dict[str, Any] | list[Any]) -> str:
    """The compact JSON text a JSON value is stored, shown and searched as."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def stored_value(
    value: object, max_chars: int, field: str = "value"
) -> tuple[str, bool, list[Redaction]]:
    """(the text to store, whether it is JSON, the secrets redacted): a string as the
    value checks take it, an object or array checked as plain JSON within `max_chars`
    characters of compact JSON, its strings redacted."""
    if isinstance(value, str):
        text, redactions = redact_field(v.clean_value(value, max_chars, field), field)
        return text, False, redactions
    if not isinstance(value, dict | list):
        raise InvalidInputError(
            field, f"must be text, a JSON object or an array, got {_kind(value)}"
        )
    if not value:
        raise InvalidInputError(field, "must not be empty")
    # Plain JSON, and bounded before anything is encoded or scanned (the walk counts 8
    # characters an item, more than compact JSON spends: a generous bound on the work).
    v.check_json_tree(value, field, budget=8 * max_chars)
    text = encoded(value)
    if len(text) > max_chars:
        raise InvalidInputError(
            field,
            f"is {len(text):,} characters as JSON; the limit is {max_chars:,} (split it up)",
        )
    found: list[Redaction] = []
    safe = redact_json(value, field, found)
    return (encoded(safe) if found else text), True, found


def shown_value(text: str, is_json: bool) -> JsonValue:
    """The value as it was given: the object or array of a JSON value, else the text. A
    JSON value that no longer parses (a damaged row) is shown as its text."""
    if not is_json:
        return text
    try:
        loaded = json.loads(text)
    except ValueError:
        return text
    return loaded if isinstance(loaded, dict | list) else text


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


__all__ = ["encoded", "shown_value", "stored_value"]
