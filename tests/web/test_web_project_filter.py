"""The web view's project filter in a real headless Chromium over a real `memory-mcp ui`:
"every project", a project (with the shared `*` memories, as every search shows them),
and `*` alone, the shared memories only. Issue 47: choosing `*` showed every project's
memories, the same as "every project"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from memory_mcp.models import Role, Scope, StoreRequest
from tests.web.web_browser import chromium, log_in
from tests.web.web_server import WORD, WebServer, running

SHARED, ALPHA, BETA = "shared-rule", "alpha-deploy", "beta-deploy"
SEEDED = {SHARED, ALPHA, BETA}
MEMORIES = [
    (
        "w1",
        Role.WORKER,
        StoreRequest(key=SHARED, value=f"{WORD}: review every change", scope=Scope.SWARM),
    ),
    (
        "w1",
        Role.WORKER,
        StoreRequest(
            key=ALPHA,
            value=f"{WORD}: alpha deploys with make ship",
            scope=Scope.SWARM,
            project="acme/alpha",
        ),
    ),
    (
        "w1",
        Role.WORKER,
        StoreRequest(
            key=BETA,
            value=f"{WORD}: beta deploys with helm",
            scope=Scope.SWARM,
            project="acme/beta",
        ),
    ),
]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with running(tmp_path_factory.mktemp("web-projects"), MEMORIES) as server:
        yield server


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context.new_page()


def shown(page: Page, project: str, query: str = "") -> set[str]:
    """The seeded keys the page shows with `project` chosen in the form (and `query`)."""
    page.select_option("select[name=project]", project)
    page.fill("input[name=q]", query)
    with page.expect_navigation():
        page.click("form.search button[type=submit]")
    assert page.locator("select[name=project]").input_value() == project
    return SEEDED & set(page.locator("table.memories td.key").all_inner_texts())


@pytest.mark.parametrize("query", ["", WORD], ids=["list", "search"])
def test_shared_only_is_not_every_project(web: WebServer, page: Page, query: str) -> None:
    log_in(page, web.base, web.tokens["w1"])
    labels = page.locator("select[name=project] option").all_inner_texts()
    assert labels == ["every project", "* (shared only)", "acme/alpha (and *)", "acme/beta (and *)"]
    assert shown(page, "", query) == SEEDED
    assert shown(page, "*", query) == {SHARED}
    assert shown(page, "acme/alpha", query) == {SHARED, ALPHA}
    assert shown(page, "acme/beta", query) == {SHARED, BETA}
