"""The MCP edge: the server and its tools, what each tool returns, the SDK adjusted to our
needs, the caller of a request, and the stdio transport's stdin and stdout."""
