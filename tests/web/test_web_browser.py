"""The web view in a real headless Chromium (Debian's package, driven by Playwright):
the page loads, a search shows results, another agent's private memory never appears,
a wrong or missing token is refused, and a memory's markup never runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Dialog, Page

from tests.web.web_browser import chromium, log_in, search
from tests.web.web_server import (
    HISTORY_KEY,
    HOSTILE_KEY,
    HOSTILE_VALUE,
    PRIVATE_KEY,
    WORD,
    WebServer,
    running,
)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with running(tmp_path_factory.mktemp("web-browser")) as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    """A new tab with no login cookie."""
    browser.clear_cookies()
    tab = browser.new_page()
    try:
        yield tab
    finally:
        tab.close()


def shown_keys(page: Page) -> list[str]:
    return page.locator("table.memories td.key").all_inner_texts()


def test_the_page_loads_and_asks_for_a_token(web: WebServer, page: Page) -> None:
    answer = page.goto(f"{web.base}/ui/")
    assert answer is not None
    assert answer.status == 401
    assert page.locator("input[name=token]").is_visible()
    assert shown_keys(page) == []


def test_a_wrong_token_is_refused(web: WebServer, page: Page) -> None:
    page.goto(f"{web.base}/ui/login")
    page.fill("input[name=token]", "mmcp_not-a-token-anyone-was-given")
    page.click("form.login button")
    assert "not valid" in page.locator("[role=alert]").inner_text()
    assert page.context.cookies() == []


def test_a_search_shows_results(web: WebServer, page: Page) -> None:
    log_in(page, web.base, web.tokens["w1"])
    search(page, WORD)
    keys = shown_keys(page)
    assert "test-command" in keys  # w1's swarm memory
    assert "w1-editor" in keys  # w1's own
    assert "deploy-window" in keys  # the lead's swarm memory


def test_another_agents_private_memory_never_appears(web: WebServer, page: Page) -> None:
    log_in(page, web.base, web.tokens["w1"])
    search(page, WORD)
    assert PRIVATE_KEY not in shown_keys(page)
    assert "PRIVATE-W2-MARKER" not in page.content()
    answer = page.goto(f"{web.base}/ui/memory/{web.ids[PRIVATE_KEY]}")
    assert answer is not None
    assert answer.status == 404
    assert "PRIVATE-W2-MARKER" not in page.content()


def test_its_owner_sees_it(web: WebServer, page: Page) -> None:
    log_in(page, web.base, web.tokens["w2"])
    search(page, WORD)
    assert PRIVATE_KEY in shown_keys(page)


def test_a_script_in_a_memory_is_text_and_never_runs(web: WebServer, page: Page) -> None:
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    log_in(page, web.base, web.tokens["w1"])
    search(page, WORD)
    assert HOSTILE_KEY in shown_keys(page)
    page.click(f"a[href='/ui/memory/{web.ids[HOSTILE_KEY]}']")
    page.wait_for_selector("pre.value")
    assert page.locator("h1.key").inner_text() == HOSTILE_KEY
    assert page.locator("pre.value").first.inner_text() == HOSTILE_VALUE
    assert page.locator("script").count() == 0
    assert dialogs == []


def test_a_memory_shows_who_wrote_each_version(web: WebServer, page: Page) -> None:
    log_in(page, web.base, web.tokens["w3"])  # no query: the latest memories
    page.click(f"a[href='/ui/memory/{web.ids[HISTORY_KEY]}']")
    versions = page.locator("ol.history li.version summary").all_inner_texts()
    assert len(versions) == 2
    assert "version 2 (current) · lead" in versions[0]
    assert "version 1 · w1" in versions[1]


def test_logging_out_forgets_the_token(web: WebServer, page: Page) -> None:
    log_in(page, web.base, web.tokens["w1"])
    page.click("form.logout button")
    page.wait_for_url(f"{web.base}/ui/login")
    answer = page.goto(f"{web.base}/ui/")
    assert answer is not None
    assert answer.status == 401


def test_a_screenshot_of_the_results(web: WebServer, page: Page, tmp_path: Path) -> None:
    """What docs/ui.png shows (`python -m tests.web.web_browser docs/ui.png` remakes it)."""
    log_in(page, web.base, web.tokens["w1"])
    search(page, WORD)
    shot = tmp_path / "ui.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
