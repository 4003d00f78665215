"""The web view over real HTTP: `memory-mcp ui` spawned on 127.0.0.1, tokens from the real
`memory-mcp token add`, a store holding three agents' memories (tests/web/web_server.py).
What a page shows is what the token's agent may see; everything from a memory is text."""

from __future__ import annotations

import html
import re
import sqlite3
import subprocess
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

import httpx2
import pytest

from memory_mcp.auth.tokens import token_hash
from memory_mcp.web.access import COOKIE
from memory_mcp.web.logins import LOGIN_SECONDS
from tests.http.team_server import EXE, server_env, token_add, token_revoke
from tests.http.team_server import running as team_running
from tests.web.web_server import (
    HISTORY_KEY,
    HOSTILE_KEY,
    HOSTILE_TAG,
    HOSTILE_VALUE,
    LONG_HISTORY_KEY,
    LONG_HISTORY_VERSIONS,
    PRIVATE_KEY,
    WORD,
    WebServer,
    running,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with running(tmp_path_factory.mktemp("web")) as server:
        yield server


def memory_ids(html: str) -> set[int]:
    """The memories a page lists (each row is <tr class="memory" data-id=N>)."""
    return {int(found) for found in re.findall(r'<tr class="memory[^"]*" data-id="(\d+)"', html)}


# -- who may look -----------------------------------------------------------------------------


def test_without_a_token_the_page_is_the_login_form(web: WebServer) -> None:
    answer = web.get("/ui/")
    assert answer.status_code == 401
    assert 'name="token"' in answer.text
    assert WORD not in answer.text


@pytest.mark.parametrize(
    "header",
    ["Bearer mmcp_not-a-token-anyone-was-given", "Bearer mmcp_", "Basic dzE6cGFzc3dvcmQ="],
)
def test_a_wrong_token_is_refused(web: WebServer, header: str) -> None:
    answer = web.get("/ui/", headers={"Authorization": header})
    assert answer.status_code == 401
    assert WORD not in answer.text


def test_a_memory_page_needs_a_token(web: WebServer) -> None:
    answer = web.get(f"/ui/memory/{web.ids['test-command']}")
    assert answer.status_code == 401
    assert "make test" not in answer.text


def test_a_revoked_token_is_refused_from_the_next_request(tmp_path: Path, web: WebServer) -> None:
    token = token_add(web.db, "w-revoked")
    assert web.get("/ui/", token).status_code == 200
    token_revoke(web.db, "w-revoked")
    assert web.get("/ui/", token).status_code == 401


def test_the_login_form_sets_a_strict_http_only_cookie(web: WebServer) -> None:
    answer = httpx2.post(
        f"{web.base}/ui/login", data={"token": web.tokens["w1"]}, timeout=60, follow_redirects=False
    )
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "path=/ui" in cookie


def test_the_cookie_opens_the_pages(web: WebServer) -> None:
    with httpx2.Client(base_url=web.base, timeout=60) as browser:
        browser.post("/ui/login", data={"token": web.tokens["w1"]})
        answer = browser.get("/ui/")
    assert answer.status_code == 200
    assert web.ids["w1-editor"] in memory_ids(answer.text)


def log_in(base: str, token: str) -> str:
    """The login id the form's cookie holds."""
    answer = httpx2.post(
        f"{base}/ui/login", data={"token": token}, timeout=60, follow_redirects=False
    )
    assert answer.status_code == 303
    login_id = answer.cookies[COOKIE]
    assert login_id
    return login_id


def page_with(base: str, login_id: str) -> httpx2.Response:
    """A page asked for with nothing but a cookie, as a copied cookie would be replayed."""
    return httpx2.get(f"{base}/ui/", cookies={COOKIE: login_id}, timeout=60)


def test_the_login_cookie_holds_a_login_id_never_the_token(web: WebServer) -> None:
    token = web.tokens["w1"]
    answer = httpx2.post(
        f"{web.base}/ui/login", data={"token": token}, timeout=60, follow_redirects=False
    )
    cookie = answer.headers["set-cookie"]
    assert token not in cookie
    assert token.removeprefix("mmcp_")[:16] not in cookie
    assert token_hash(token) not in cookie
    assert f"max-age={LOGIN_SECONDS}" in cookie.lower()
    assert log_in(web.base, token) != log_in(web.base, token), "a new id for every login"


def test_logging_out_ends_the_login_on_the_server(web: WebServer) -> None:
    login_id = log_in(web.base, web.tokens["w1"])
    assert page_with(web.base, login_id).status_code == 200
    out = httpx2.post(
        f"{web.base}/ui/logout", cookies={COOKIE: login_id}, timeout=60, follow_redirects=False
    )
    assert out.status_code == 303
    replayed = page_with(web.base, login_id)  # a copy of the cookie kept from before
    assert replayed.status_code == 401
    assert "login has ended" in replayed.text
    assert web.ids["w1-editor"] not in memory_ids(replayed.text)


def test_a_made_up_login_id_is_refused(web: WebServer) -> None:
    for forged in ("x" * 43, web.tokens["w1"], token_hash(web.tokens["w1"]), "y" * 500):
        assert page_with(web.base, forged).status_code == 401


def test_revoking_the_token_ends_its_logins(web: WebServer) -> None:
    token = token_add(web.db, "w-login-revoked")
    login_id = log_in(web.base, token)
    assert page_with(web.base, login_id).status_code == 200
    token_revoke(web.db, "w-login-revoked")
    refused = page_with(web.base, login_id)
    assert refused.status_code == 401
    assert 'name="token"' in refused.text


def test_a_wrong_token_in_the_login_form_is_refused(web: WebServer) -> None:
    answer = httpx2.post(f"{web.base}/ui/login", data={"token": "mmcp_wrong"}, timeout=60)
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert "not valid" in answer.text


def test_a_login_posted_from_another_site_is_refused(web: WebServer) -> None:
    answer = httpx2.post(
        f"{web.base}/ui/login",
        data={"token": web.tokens["w1"]},
        headers={"Origin": "http://evil.example"},
        timeout=60,
    )
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_a_foreign_host_header_is_refused(web: WebServer) -> None:
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1."""
    answer = web.get("/ui/", web.tokens["w1"], headers={"Host": "evil.example"})
    assert answer.status_code == 421


def test_every_page_forbids_scripts_framing_and_caching(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"])
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["cache-control"] == "no-store"


# -- what a page shows --------------------------------------------------------------------------


def test_a_search_shows_own_and_swarm_memories(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": WORD, "limit": "50"})
    assert answer.status_code == 200
    shown = memory_ids(answer.text)
    assert web.ids["w1-editor"] in shown  # w1's own
    assert web.ids["deploy-window"] in shown  # the lead's swarm memory


def test_another_agents_private_memory_never_appears(web: WebServer) -> None:
    pages = [
        web.get("/ui/", web.tokens["w1"], params={"q": WORD, "limit": "50"}),
        web.get("/ui/", web.tokens["w1"], params={"q": PRIVATE_KEY}),
        web.get("/ui/", web.tokens["lead"], params={"q": "the plan only w2 may read"}),
        web.get("/ui/", web.tokens["lead"], params={"limit": "50"}),
    ]
    for page in pages:
        assert web.ids[PRIVATE_KEY] not in memory_ids(page.text)
        assert "PRIVATE-W2-MARKER" not in page.text


def test_its_owner_sees_the_private_memory(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w2"], params={"q": WORD, "limit": "50"})
    assert web.ids[PRIVATE_KEY] in memory_ids(answer.text)


def test_another_agents_private_memory_page_is_not_found(web: WebServer) -> None:
    """The same answer as an id that does not exist: existence is private."""
    private = web.get(f"/ui/memory/{web.ids[PRIVATE_KEY]}", web.tokens["lead"])
    missing = web.get("/ui/memory/999999", web.tokens["lead"])
    assert private.status_code == 404
    assert "PRIVATE-W2-MARKER" not in private.text
    assert private.text.replace(str(web.ids[PRIVATE_KEY]), "N") == missing.text.replace(
        "999999", "N"
    )


def test_a_memory_page_shows_the_whole_memory(web: WebServer) -> None:
    answer = web.get(f"/ui/memory/{web.ids['deploy-window']}", web.tokens["w1"])
    assert answer.status_code == 200
    assert "deploys happen on Tuesdays after 14:00 UTC" in answer.text
    assert "release" in answer.text


def test_viewing_a_memory_does_not_count_as_a_read(web: WebServer) -> None:
    """The access count feeds ranking and stands for agents' reads (memory-get); a
    person looking at the page is not one."""
    memory_id = web.ids["test-command"]
    pages = [web.get(f"/ui/memory/{memory_id}", web.tokens["w1"]) for _ in range(3)]
    assert all(page.status_code == 200 for page in pages)
    assert all(re.search(r"<th>read</th><td>0 times", page.text) for page in pages)
    with sqlite3.connect(f"file:{web.db}?mode=ro", uri=True, timeout=30) as conn:
        (count,) = conn.execute(
            "SELECT access_count FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
    assert count == 0


def test_the_latest_memories_without_a_query(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w3"])
    assert answer.status_code == 200
    assert memory_ids(answer.text) == {
        web.ids["test-command"],
        web.ids[HOSTILE_KEY],
        web.ids[HISTORY_KEY],
        web.ids["deploy-window"],
    }


def test_browsing_goes_page_by_page(web: WebServer) -> None:
    """w3 sees the four swarm memories: two pages of three and one, no memory twice."""
    first = web.get("/ui/", web.tokens["w3"], params={"limit": "3"})
    link = re.search(r'<a class="next" href="([^"]+)"', first.text)
    assert link is not None
    second = web.get(html.unescape(link.group(1)), web.tokens["w3"])
    assert len(memory_ids(first.text)) == 3
    assert len(memory_ids(second.text)) == 1
    assert memory_ids(first.text) | memory_ids(second.text) == {
        web.ids["test-command"],
        web.ids[HOSTILE_KEY],
        web.ids[HISTORY_KEY],
        web.ids["deploy-window"],
    }
    assert '<a class="next"' not in second.text


def test_browsing_filters_by_agent(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"agent": "lead"})
    assert memory_ids(answer.text) == {web.ids["deploy-window"]}


def test_browsing_filters_by_time(web: WebServer) -> None:
    """Everything was written moments ago: all of it in the last day, none a day old."""
    recent = web.get("/ui/", web.tokens["w3"], params={"since": "1d"})
    old = web.get("/ui/", web.tokens["w3"], params={"until": "1d"})
    assert len(memory_ids(recent.text)) == 4
    assert memory_ids(old.text) == set()


def test_a_search_filters_by_agent(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": WORD, "agent": "w1"})
    assert memory_ids(answer.text) == {
        web.ids["test-command"],
        web.ids["w1-editor"],
        web.ids[HISTORY_KEY],  # w1 owns it; the lead wrote its current version
    }


def test_a_bad_time_filter_names_the_problem(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"since": "last tuesday"})
    assert answer.status_code == 400
    assert "invalid since" in answer.text


def test_a_memory_page_shows_its_history(web: WebServer) -> None:
    answer = web.get(f"/ui/memory/{web.ids[HISTORY_KEY]}", web.tokens["w3"])
    versions = re.findall(r'<li class="version" data-version="(\d+)"', answer.text)
    assert versions == ["2", "1"]  # newest first
    assert "quokka: tag, build, upload" in answer.text  # version 1, by w1
    assert "quokka: tag, build, sign, upload" in answer.text  # version 2, by the lead


def test_a_long_history_shows_its_newest_versions_and_how_to_see_the_rest(
    web: WebServer,
) -> None:
    answer = web.get(f"/ui/memory/{web.ids[LONG_HISTORY_KEY]}", web.tokens["w4"])
    versions = re.findall(r'<li class="version" data-version="(\d+)"', answer.text)
    newest = [str(n) for n in range(LONG_HISTORY_VERSIONS, LONG_HISTORY_VERSIONS - 50, -1)]
    assert versions == newest
    oldest_shown = LONG_HISTORY_VERSIONS - 49
    assert f"Versions 1 to {oldest_shown - 1} are not shown" in answer.text
    assert f"--before {oldest_shown}" in answer.text
    link = re.search(r'<a href="([^"]+)">older versions</a>', answer.text)
    assert link is not None
    older = web.get(html.unescape(link.group(1)), web.tokens["w4"])
    versions = re.findall(r'<li class="version" data-version="(\d+)"', older.text)
    assert versions == [str(n) for n in range(oldest_shown - 1, 0, -1)]
    assert "are not shown" not in older.text
    assert ">newest versions</a>" in older.text


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/ui/", {"limit": "²"}, "limit"),  # a digit to str.isdigit, not to int()
        ("/ui/", {"limit": "9" * 40}, "limit"),
        ("/ui/memory/{id}", {"before": "soon"}, "before"),
        ("/ui/memory/{id}", {"before": "1"}, "before"),
    ],
)
def test_a_bad_number_in_the_address_is_named(
    web: WebServer, path: str, params: dict[str, str], named: str
) -> None:
    answer = web.get(path.format(id=web.ids[HISTORY_KEY]), web.tokens["w1"], params=params)
    assert answer.status_code == 400
    assert f"invalid {named}" in answer.text


def test_an_id_past_the_stores_integers_is_a_400_naming_the_id(web: WebServer) -> None:
    """Before: the driver's OverflowError, a 500."""
    answer = web.get("/ui/memory/9223372036854775808", web.tokens["w1"])
    assert answer.status_code == 400
    assert "invalid id" in answer.text


def test_filters_narrow_a_search(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": WORD, "tag": "ops"})
    assert memory_ids(answer.text) == {web.ids["deploy-window"]}


def test_the_scope_filter_offers_only_scopes_the_view_shows(web: WebServer) -> None:
    """Issue 35: it offered `session`, which the view never shows (each request is a new
    session: web/access.py)."""
    answer = web.get("/ui/", web.tokens["w1"])
    select = answer.text.split('name="scope"')[1].split("</select>")[0]
    assert re.findall(r'<option value="([^"]*)"', select) == ["all", "agent", "swarm"]


def test_a_bad_filter_names_the_problem(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": WORD, "scope": "everything"})
    assert answer.status_code == 400
    assert "invalid scope" in answer.text


# -- a memory is text, never markup -------------------------------------------------------------


def test_a_script_in_a_memory_is_shown_as_text_in_search_results(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": WORD, "limit": "50"})
    assert web.ids[HOSTILE_KEY] in memory_ids(answer.text)
    assert "<script" not in answer.text.lower()
    assert "<img" not in answer.text.lower()
    assert "&lt;script&gt;alert(&#39;value&#39;)&lt;/script&gt;" in answer.text


def test_a_script_in_a_memory_is_shown_as_text_on_its_page(web: WebServer) -> None:
    answer = web.get(f"/ui/memory/{web.ids[HOSTILE_KEY]}", web.tokens["w1"])
    assert answer.status_code == 200
    assert "<script" not in answer.text.lower()
    assert "<b onmouseover" not in answer.text  # the tag
    assert "&lt;/pre&gt;&lt;script&gt;" in answer.text  # the metadata, as text


def test_the_seeded_hostile_memory_really_holds_markup() -> None:
    """The escaping tests above mean something only if the memory carries live markup."""
    assert "<script>" in HOSTILE_VALUE
    assert "<script>" in HOSTILE_KEY
    assert HOSTILE_TAG.startswith("<b ")


def test_a_query_is_shown_back_as_text(web: WebServer) -> None:
    answer = web.get("/ui/", web.tokens["w1"], params={"q": '"><script>alert(1)</script>'})
    assert answer.status_code == 200
    assert "<script" not in answer.text.lower()


# -- where it runs ------------------------------------------------------------------------------


def test_the_team_server_serves_the_view_at_ui(tmp_path: Path, web: WebServer) -> None:
    with team_running(tmp_path, "streamable-http", web.db) as team:
        answer = httpx2.get(
            f"{team.base}/ui/",
            params={"q": WORD, "limit": "50"},
            headers={"Authorization": f"Bearer {web.tokens['w1']}"},
            timeout=60,
        )
        refused = httpx2.get(f"{team.base}/ui/", timeout=60)
        by_login = page_with(team.base, log_in(team.base, web.tokens["w1"]))
    assert answer.status_code == 200
    assert by_login.status_code == 200
    assert web.ids["w1-editor"] in memory_ids(by_login.text)
    assert web.ids["w1-editor"] in memory_ids(answer.text)
    assert web.ids[PRIVATE_KEY] not in memory_ids(answer.text)
    assert refused.status_code == 401


def test_the_view_refuses_to_listen_beyond_loopback_without_tokens(tmp_path: Path) -> None:
    done = subprocess.run(
        [EXE, "ui", "--db", str(tmp_path / "empty.db"), "--host", "0.0.0.0", "--port", "1"],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 1
    assert "refusing to listen on 0.0.0.0" in done.stderr


def test_a_fresh_install_carries_the_templates() -> None:
    """pyproject's package-data must name every file the view reads at run time."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["memory_mcp"]
    package = ROOT / "memory_mcp"
    needed = [
        path.relative_to(package).as_posix()
        for folder in ("web/templates", "web/static")
        for path in (package / folder).iterdir()
    ]
    assert needed  # the folders are there
    missing = [name for name in needed if not any(fnmatch(name, p) for p in patterns)]
    assert missing == []
