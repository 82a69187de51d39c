"""A real headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by Selenium.

Nothing is downloaded at run time: the browser and its driver are the Debian packages
(``scripts/test.sh`` installs them), Selenium is told both paths, and Chromium's own network
features (updates, sync, field trials) are off, so the only traffic is to the test's server.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .e2e_support import skip_unless_ci

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
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
    "--window-size=1400,1000",
)


def require_chromium() -> None:
    """Skip when Chromium, its driver or Selenium is missing; under CI=true that is a failure instead."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (the test extra)")
    if not missing:
        return
    reason = f"the browser tests need {' and '.join(missing)} (`bash scripts/test.sh` as root installs them)"
    skip_unless_ci(reason)


STARTS = 3  # tries to start chromedriver


class Browser:
    """One Chromium with a fresh profile; ``errors()`` drains its console's SEVERE entries."""

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="rumble-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # chromedriver listens on a port selenium picked free a moment before; a run beside this one
        # can take it meanwhile, and chromedriver then exits at once: start it again on another.
        for attempt in range(STARTS):
            try:
                self.driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
                break
            except WebDriverException:
                if attempt == STARTS - 1:
                    raise
        self.driver.set_page_load_timeout(30)

    def open(self, url: str) -> None:
        self.driver.get(url)

    def console(self) -> list[dict]:
        """Every console entry since the last call (the driver hands each out once)."""
        return self.driver.get_log("browser")

    def errors(self) -> list[dict]:
        return [entry for entry in self.console() if entry["level"] == "SEVERE"]

    def broken_images(self) -> list[str]:
        """The page's images that did not load (naturalWidth 0 once complete)."""
        return self.driver.execute_script(
            "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src);"
        )

    def quit(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
