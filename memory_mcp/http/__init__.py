"""The team server's edge: the MCP server over streamable HTTP and SSE (uvicorn), bearer
tokens on every request, /healthz, the web view mounted at /ui, and the index-note tool."""
