"""Headless Chromium for the built book: Debian's ``chromium`` driven by its ``chromedriver`` through selenium.

The browser test (``tests/book/test_book_browser.py``) and the PDF of the book (:mod:`attnpaths_book.pdf`) start
it here, with the network cut off: every host name resolves to nothing (``--host-resolver-rules``), except the
hosts named in ``reachable`` (the browser test serves the book from ``127.0.0.1``; the PDF reads it from
``file://`` and reaches no host at all). ``.ci/run`` installs the two programs (``apt-get install chromium
chromium-driver``); :func:`missing_browser` says why the browser cannot start where they are absent.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"
INSTALL_HINT = "Debian's chromium and chromium-driver are not installed (`bash .ci/run` installs them)"

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1600",
)
"""The flags of every start; :func:`start_browser` adds the host-resolver rule and a fresh profile folder."""


def missing_browser() -> str | None:
    """Why the browser cannot start here (``chromium`` or ``chromedriver`` is not on the ``PATH``), or ``None``."""
    absent = [name for name in (CHROMIUM, CHROMEDRIVER) if shutil.which(name) is None]
    return f"{INSTALL_HINT}: {' and '.join(absent)} not on the PATH" if absent else None


def resolver_rule(reachable: Sequence[str] = ()) -> str:
    """The ``--host-resolver-rules`` flag that makes every host unreachable except those of ``reachable``."""
    rule = "MAP * ~NOTFOUND" + "".join(f", EXCLUDE {host}" for host in reachable)
    return f"--host-resolver-rules={rule}"


@contextmanager
def start_browser(
    reachable: Sequence[str] = (), extra_flags: Sequence[str] = (), logs: bool = False, page_load_timeout_s: float = 60
) -> Iterator[object]:
    """A headless Chromium session (a ``selenium.webdriver.Chrome``), quit on exit with its profile folder removed.

    Args:
        reachable: host names the pages may reach (e.g. ``["127.0.0.1"]``); every other host resolves to nothing.
        extra_flags: more Chromium flags.
        logs: collect the console (``get_log("browser")``) and the DevTools network events
            (``get_log("performance")``), which :mod:`attnpaths_book.pdf` reads for failed requests.
        page_load_timeout_s: how long ``get`` waits for a page.

    Raises ``FileNotFoundError`` (with :func:`missing_browser`'s reason) when the programs are not installed.
    """
    missing = missing_browser()
    if missing:
        raise FileNotFoundError(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in (*CHROMIUM_FLAGS, resolver_rule(reachable), *extra_flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if logs:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        session = webdriver.Chrome(service=Service(executable_path=shutil.which(CHROMEDRIVER)), options=options)
    except BaseException:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    try:
        session.set_page_load_timeout(page_load_timeout_s)
        yield session
    finally:
        try:
            session.quit()
        finally:  # a browser that fails to quit leaves no profile folder behind
            shutil.rmtree(profile, ignore_errors=True)
