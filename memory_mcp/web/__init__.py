"""The read-only web view: server-rendered pages (Jinja2, no JavaScript) to browse, search
and read memories, as the agent of a bearer token sees them.

`pages` holds the routes, `access` who is asking (token from the Authorization header or
the login cookie, Host check, security headers), `views` the shaping of records for the
templates, `server` the `memory-mcp ui` command. The same routes are mounted at /ui on the
HTTP team server (http/team_server.py)."""
