"""The base of every tool result model (memories.py, links.py, explanations.py, graph.py
here): no unknown fields, and optional extras left out when empty."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class ToolResult(BaseModel):
    # Built when first used, not when imported: a CLI command shows one of these models
    # and should not pay for building the other dozens (~25 ms; the MCP server builds
    # every tool's schema as it starts anyway).
    model_config = ConfigDict(extra="forbid", defer_build=True)
    # Fields left out of the result when None or empty.
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.omitted_when_empty:
            if data.get(name) in (None, [], False):
                data.pop(name, None)
        return data
