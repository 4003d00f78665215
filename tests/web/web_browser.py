"""Chromium (`chromium` on PATH; Debian's, installed by `make install-dev`) driven by
Playwright, headless, with a new empty profile: no `playwright install`, no download.

`python -m tests.web.web_browser docs/ui.png` takes the README's screenshot: a seeded store,
`memory-mcp ui` on it, a search as worker w1."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, sync_playwright

from memory_mcp.models import Role, Scope, StoreRequest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # we run as root in CI containers
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A busy 2-core machine: a page normally loads in well under a second.
TIMEOUT_MS = 60_000


@contextmanager
def chromium(profile: Path) -> Iterator[BrowserContext]:
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1000, "height": 560},
        )
        context.set_default_timeout(TIMEOUT_MS)
        context.set_default_navigation_timeout(TIMEOUT_MS * 2)
        try:
            yield context
        finally:
            context.close()


def log_in(page: Page, base: str, token: str) -> None:
    """Through the form, as a person would: the cookie it sets opens the other pages."""
    page.goto(f"{base}/ui/login")
    page.fill("input[name=token]", token)
    page.click("form.login button")
    page.wait_for_url(f"{base}/ui/")


def search(page: Page, query: str) -> None:
    page.fill("input[name=q]", query)
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("main h1:has-text('for')")


def demo_seed() -> list[tuple[str, Role, StoreRequest]]:
    """What a team's store might hold: the screenshot's (the tests' seed has hostile rows)."""
    swarm, agent = Scope.SWARM, Scope.AGENT
    memories = [
        (
            "lead",
            "deploy-window",
            "Deploys happen on Tuesdays after 14:00 UTC",
            ["release", "ops"],
            swarm,
        ),
        (
            "lead",
            "release-checklist",
            "Tag, build, sign, upload; then announce in #releases",
            ["release"],
            swarm,
        ),
        (
            "w1",
            "test-command",
            "Run `make test` before pushing; it sets up .venv itself",
            ["build"],
            swarm,
        ),
        (
            "w1",
            "rollback",
            "Roll back a release with `deploy --to previous`; it keeps the data",
            ["release", "ops"],
            agent,
        ),
        ("w2", "payments-lead", "Maria leads the payments team", ["people"], swarm),
    ]
    return [
        (
            owner,
            Role.LEAD if owner == "lead" else Role.WORKER,
            StoreRequest(key=key, value=value, tags=tags, scope=scope),
        )
        for owner, key, value, tags, scope in memories
    ]


def main(target: str) -> int:
    from tests.web.web_server import running

    with tempfile.TemporaryDirectory() as tmp:
        with (
            running(Path(tmp), demo_seed()) as server,
            chromium(Path(tmp) / "profile") as context,
        ):
            page = context.new_page()
            log_in(page, server.base, server.tokens["w1"])
            search(page, "how do we release?")
            page.screenshot(path=target)
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/ui.png"))
