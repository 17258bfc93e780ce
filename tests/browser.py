"""Open HTML reports in a real headless Chromium (Debian's ``chromium`` package,
driven by Playwright for Python; its browsers are never downloaded)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CTXBENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOW = "apt-get install -y chromium (Debian; .ci/run does it in CI)"


def launch() -> Any:
    """A Playwright Chromium browser, or a skip naming how to install it."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM}: install it with {HOW}")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="pip install -e '.[test]'"
    )
    manager = sync_api.sync_playwright().start()
    browser = manager.chromium.launch(
        executable_path=CHROMIUM, args=ARGS, headless=True
    )
    return manager, browser


@dataclass
class Opened:
    """A page opened from a file, with what it tried to fetch and what it logged."""

    page: Any
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)

    def assert_clean(self) -> None:
        """No console error, no page error, no request beyond the file itself."""
        errors = [
            (kind, text)
            for kind, text in self.console
            if kind in ("error", "pageerror", "warning")
        ]
        assert errors == []
        assert self.blocked == []


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    manager, chromium = launch()
    try:
        yield chromium
    finally:
        chromium.close()
        manager.stop()


def open_report(
    browser: Any, path: Path, width: int = 1280, height: int = 900
) -> Opened:
    """Open ``path`` from disk; every request that is not for ``file://`` is
    recorded and aborted (a test then fails on it)."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, java_script_enabled=True
    )
    page = context.new_page()
    opened = Opened(page)

    def route(r: Any) -> None:
        url = r.request.url
        opened.requests.append(url)
        if url.startswith("file://"):
            r.continue_()
        else:
            opened.blocked.append(url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: opened.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: opened.console.append(("pageerror", str(e))))
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    return opened
