"""Where the MCP SDK's own handling of arguments is adjusted, at the edge only:

- argument validation errors are reported in this project's words ("invalid limit: must be
  a whole number, got a string") instead of pydantic's text with documentation URLs;
- every tool argument is checked for valid Unicode and bounded nesting before it is parsed,
  and by name (mcp/argument_names.py): an unknown one is refused, not dropped, and every
  missing required one is named;
- a string argument where the argument takes text (`value`: text, an object or an array)
  stays the string it was sent as: the SDK parses string arguments of other types as JSON
  (for clients that send a list as JSON text), which would make '{"a": 1}' an object;
- tool descriptions are the docstrings without their source indentation, and argument
  schemas without what pydantic adds that tells a model nothing (`tight_schema`): every
  session pays for the tool list in context;
- over stdio, a request line the SDK cannot parse (a lone surrogate escape such as
  "\\ud800", or nesting deeper than its parser's limit) still gets an answer: the SDK
  drops such lines silently, and the client would wait forever;
- every tool registered under a name that has aliases (mcp/tool_names.py) is also
  registered under them (they answer, but tools/list shows them only with
  `legacy_tool_names`), and tools/list leaves lead-only tools out for a worker.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Callable
from types import TracebackType
from typing import Any, get_args

import anyio
import mcp_types as types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from memory_mcp.checks.validation import check_arguments
from memory_mcp.errors import InvalidInputError
from memory_mcp.mcp.argument_names import argument_problems
from memory_mcp.mcp.identity import ROLE_CLAIM
from memory_mcp.mcp.tool_names import alias_description, aliases_of, unlisted
from memory_mcp.models import Role

log = logging.getLogger(__name__)

_EXPECTED = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "int_parsing": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a JSON object",
}
# A request id near the start of a line, for lines even Python's json cannot read.
_REQUEST_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value!r:.30}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _describe(error: ErrorDetails) -> str:
    location = [str(part) for part in error["loc"]]
    argument = location[0] if location else "arguments"
    inner = f"item {'.'.join(location[1:])} " if len(location) > 1 else ""
    kind = error["type"]
    if kind == "missing":
        return f"invalid {argument}: {inner}is required"
    if kind in _EXPECTED:
        got = _json_kind(error.get("input"))
        return f"invalid {argument}: {inner}must be {_EXPECTED[kind]}, got {got}"
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", "")).replace("'", "")
        return f"invalid {argument}: {inner}{error.get('input')!r:.60} is not one of {expected}"
    return f"invalid {argument}: {inner}{error['msg'][:200]}"


def describe_validation_error(exc: ValidationError) -> str:
    """pydantic's errors, one clause each, without echoing whole values or URLs."""
    first_per_argument: dict[str, ErrorDetails] = {}
    for error in exc.errors(include_url=False):
        first_per_argument.setdefault(str(error["loc"][:1]), error)
    return "; ".join(_describe(error) for error in first_per_argument.values())


def tight_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema without pydantic's noise: the titles (each argument's name
    again), `null` offered beside the real type, and defaults that mean "not given"
    (null, false, [], {}): an optional argument is left out to say none. What the server
    accepts does not change (the arguments are still parsed from the function's
    signature); only what every session reads does (20,385 characters for a worker's
    list before, README "The tools")."""
    tight = {key: value for key, value in schema.items() if key != "title"}
    choices = tight.get("anyOf")
    if isinstance(choices, list) and {"type": "null"} in choices and len(choices) == 2:
        del tight["anyOf"]
        tight.update(next(choice for choice in choices if choice != {"type": "null"}))
    if "default" in tight and tight["default"] in (None, False, [], {}):
        del tight["default"]
    if tight.get("additionalProperties") is True:
        del tight["additionalProperties"]
    if isinstance(tight.get("properties"), dict):
        tight["properties"] = {
            name: tight_schema(part) for name, part in tight["properties"].items()
        }
    if isinstance(tight.get("items"), dict):
        tight["items"] = tight_schema(tight["items"])
    return tight


# Tools already built, by everything that defines one. Building one has pydantic make the
# argument model and its schema from the signature: ~60 ms of CPU for the whole tool list,
# paid again by every server in a process (each in-process client, each test) for the same
# functions. A Tool holds no state of a server's: sharing one is sharing its description.
_BUILT_TOOLS: dict[tuple[Any, ...], Tool] = {}


def _built_tool(
    fn: Callable[..., Any],
    name: str,
    title: str | None,
    description: str,
    annotations: types.ToolAnnotations | None,
    options: dict[str, Any],
) -> Tool:
    key = (
        fn,
        name,
        title,
        description,
        None if annotations is None else annotations.model_dump_json(),
        json.dumps(options, sort_keys=True, default=repr),
    )
    tool = _BUILT_TOOLS.get(key)
    if tool is None:
        tool = Tool.from_function(fn, name, title, description, annotations=annotations, **options)
        tool.parameters = tight_schema(tool.parameters)
        metadata = tool.fn_metadata
        tool.fn_metadata = StringsStayStrings(
            arg_model=metadata.arg_model,
            output_schema=metadata.output_schema,
            output_model=metadata.output_model,
            wrap_output=metadata.wrap_output,
        )
        _BUILT_TOOLS[key] = tool
    return tool


class StringsStayStrings(FuncMetadata):
    """The SDK's argument handling, but a string sent for an argument that takes text
    among other types is not parsed as JSON first (see the module doc)."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        for name, field in self.arg_model.model_fields.items():
            if isinstance(data.get(name), str) and str in get_args(field.annotation):
                parsed[name] = data[name]
        return parsed


def filter_tool_list(stdio_lead: bool, list_aliases: bool) -> Callable[..., Any]:
    """SDK middleware: tools/list without the lead-only tools unless the caller is the
    lead: over HTTP the role of the request's token, over stdio the server's own role
    (`stdio_lead`), so each connection sees its own list; and without the aliases unless
    `list_aliases` (clients that pick tools from the list by an earlier name). Decided
    without the store, so the list is answered while the store is still opening."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(result, dict):
            return result
        access = get_access_token()
        if access is None:
            lead = stdio_lead
        else:
            lead = (access.claims or {}).get(ROLE_CLAIM) == Role.LEAD.value
        hidden = unlisted(lead, list_aliases)
        tools = [tool for tool in result.get("tools", []) if tool.get("name") not in hidden]
        return {**result, "tools": tools}

    return middleware


class MemoryMCPServer(MCPServer[Any]):  # its lifespan state: mcp/server.build_server
    """MCPServer with this project's argument checks and error wording, tool aliases and
    a tool list per caller (see module doc). `stdio_lead`: whether the server's own
    agent (the caller over stdio) is the lead; `list_aliases`: whether tools/list shows
    the aliases."""

    def __init__(
        self, *args: Any, stdio_lead: bool = False, list_aliases: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.middleware.append(filter_tool_list(stdio_lead, list_aliases))

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: types.ToolAnnotations | None = None,
        icons: list[types.Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register the tool, then the same function under each of its aliases. The
        description is the docstring as `inspect.getdoc` cleans it: the SDK would send its
        source indentation into every client's context. Each tool is built once per
        process (`_built_tool`) and shared by every server that registers it."""
        description = description or inspect.getdoc(fn) or ""
        options: dict[str, Any] = {
            "icons": icons,
            "meta": meta,
            "structured_output": structured_output,
        }
        current = name or fn.__name__
        shown = [(current, description, annotations)]
        for alias in aliases_of(current):
            old = annotations
            if old is not None and old.title:
                old = old.model_copy(update={"title": f"{old.title} (alias of {current})"})
            shown.append((alias, alias_description(alias, current, description), old))
        tools = self._tool_manager._tools  # the SDK adds a Tool only by building it
        for registered, said, marked in shown:
            if registered not in tools:  # as the SDK's add_tool: the first one stays
                tools[registered] = _built_tool(fn, registered, title, said, marked, options)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            check_arguments(arguments)
        except InvalidInputError as exc:
            raise ToolError(f"Error executing tool {name}: {exc}") from exc
        tool = self._tool_manager.get_tool(name)
        problems = tool and argument_problems(name, tool.parameters, arguments)
        if problems:
            raise ToolError(f"Error executing tool {name}: {problems}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                message = describe_validation_error(exc.__cause__)
                raise ToolError(f"Error executing tool {name}: {message}") from exc.__cause__
            raise


def reply_to_unreadable_line(line: str) -> types.JSONRPCMessage | None:
    """The answer to a line the SDK's parser refused: for tools/call a tool error naming the
    argument, for another request a JSON-RPC "invalid params" error, for a line that is
    not JSON at all a parse error (id null); None for a notification (no answer is due)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        found = _REQUEST_ID.search(line[:2000])
        request_id = json.loads(found.group(1)) if found else None
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=types.ErrorData(
                code=types.PARSE_ERROR, message="the request is not readable JSON"
            ),
        )
    if not isinstance(message, dict) or "id" not in message:
        return None
    request_id = message["id"]
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        request_id = None
    elif isinstance(request_id, str) and _has_surrogate(request_id):
        request_id = None
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    try:
        check_arguments(arguments)
        problem = (
            "the request contains an unpaired surrogate (invalid Unicode) or is nested too deeply"
        )
    except InvalidInputError as exc:
        problem = str(exc)
    tool = params.get("name")
    if (
        message.get("method") == "tools/call"
        and request_id is not None
        and isinstance(tool, str)
        and not _has_surrogate(tool)
    ):
        text = f"Error executing tool {tool}: {problem}"
        result = types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
        return types.JSONRPCResponse(
            jsonrpc="2.0",
            id=request_id,
            result=result.model_dump(by_alias=True, exclude_unset=True, mode="json"),
        )
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=types.INVALID_PARAMS, message=problem),
    )


def _has_surrogate(text: str) -> bool:
    """True when the text cannot be encoded as UTF-8 (an unpaired surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class AnswerUnreadableLines:
    """The stdio read stream, minus the lines the SDK could not parse: those are answered
    here (see reply_to_unreadable_line) and logged; everything else passes through."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write_stream = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            line = _unparsed_line(item)
            if line is None:
                return item  # type: ignore[no-any-return]
            reply = reply_to_unreadable_line(line)
            log.info("unreadable request line answered: %s", _summary(reply))
            if reply is not None:
                await self._write_stream.send(SessionMessage(reply))

    def __aiter__(self) -> AnswerUnreadableLines:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerUnreadableLines:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def _unparsed_line(item: Any) -> str | None:
    """The raw line behind a transport parse failure ("json_invalid"), else None."""
    if not isinstance(item, ValidationError):
        return None
    errors = item.errors(include_url=False)
    if len(errors) == 1 and errors[0]["type"] == "json_invalid":
        raw = errors[0].get("input")
        return raw if isinstance(raw, str) else None
    return None


def _summary(reply: types.JSONRPCMessage | None) -> str:
    if reply is None:
        return "a notification, no answer due"
    if isinstance(reply, types.JSONRPCError):
        return f"id {reply.id!r}: {reply.error.message}"
    return f"id {getattr(reply, 'id', None)!r}: tool error"
