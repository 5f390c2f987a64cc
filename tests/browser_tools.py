"""Driving JupyterLab as a person does: `make lab` or `make instructor`, then headless Chromium.

Chromium is Debian's (`/usr/bin/chromium`), launched by Playwright through `executable_path`.
Each step of a browser test runs in `steps.step(name)`: when it fails, a screenshot of the page
goes to build/browser/<test>-<step>.png.
"""

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from grader.course import REPO_ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = REPO_ROOT / "build" / "browser"
IDLE = "text=/\\| Idle/"


def checkout_copy(folder: Path) -> Path:
    """The repository's tracked files copied to `folder`, sharing this checkout's .venv, so that
    what a student saves in the browser never touches the real notebooks/."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        source, target = REPO_ROOT / name.decode(), folder / name.decode()
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (folder / ".venv").symlink_to(REPO_ROOT / ".venv")
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Lab:
    """A JupyterLab started with a make target, as the README says (or with `command`)."""

    def __init__(self, checkout: Path, *make_args: str, home: Path, command=None):
        self.port, self.token = _free_port(), secrets.token_hex(16)
        env = {
            **os.environ,
            "JUPYTER_PORT": str(self.port),
            "JUPYTER_TOKEN": self.token,
            "BROWSER": "true",  # the server must not open a browser of its own
            "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        }
        self.log = open(home / "lab.log", "w")  # noqa: SIM115 -- closed in stop()
        self.process = subprocess.Popen(
            command or ["make", *make_args],
            cwd=checkout,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait_until_up()

    def _wait_until_up(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"make stopped: {Path(self.log.name).read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2)
                return
            time.sleep(0.3)
        raise TimeoutError(f"JupyterLab did not answer: {Path(self.log.name).read_text()[-2000:]}")

    def log_text(self) -> str:
        """What the server has logged so far."""
        return Path(self.log.name).read_text()

    def status(self, path: str) -> int:
        """The HTTP status of a page of the server (with the token)."""
        try:
            with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as error:
            return error.code

    def link(self, path: str) -> str:
        """A URL of the server that logs in with the token."""
        return f"{self.url}{path}?token={self.token}"

    def stop(self) -> None:
        """Stop make and the server it started."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


class Steps:
    """Named steps of one browser test; a failing step leaves a screenshot under build/."""

    def __init__(self, page, test_name: str):
        self.page, self.test_name = page, re.sub(r"\W+", "_", test_name)

    @contextlib.contextmanager
    def step(self, name: str):
        """Run one step; on failure, save a screenshot named after the test and the step."""
        try:
            yield
        except BaseException:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            step_name = re.sub(r"\W+", "_", name)
            path = SCREENSHOTS / f"{self.test_name}-{step_name}.png"
            with contextlib.suppress(Exception):
                self.page.screenshot(path=str(path), full_page=True)
            raise


def wait_until_quiet(page, quiet_ms: int = 1500, timeout_ms: int = 120_000) -> None:
    """Wait until the kernel has been idle for a spell (JupyterLab flickers Idle between cells)."""
    deadline = time.monotonic() + timeout_ms / 1000
    idle_since = None
    while time.monotonic() < deadline:
        if page.locator(IDLE).count() and page.locator(IDLE).first.is_visible():
            idle_since = idle_since or time.monotonic()
            if (time.monotonic() - idle_since) * 1000 >= quiet_ms:
                return
        else:
            idle_since = None
        page.wait_for_timeout(100)
    raise TimeoutError("the kernel did not become idle")


def run_menu(page, menu: str, item: str) -> None:
    """Click a menu of the menu bar, then one of its items."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def cell_position(page) -> int:
    """The index of the active cell, read from the status bar ("Cell 3/48")."""
    text = page.locator("span[title='Go to cell…']").inner_text()
    return int(text.split()[1].split("/")[0]) - 1


def go_to_cell(page, index: int) -> None:
    """Make cell `index` the active one, moving with J and K in command mode."""
    page.keyboard.press("Escape")
    for _ in range(500):
        here = cell_position(page)
        if here == index:
            return
        page.keyboard.press("j" if here < index else "k")
    raise RuntimeError(f"could not reach cell {index}")


def type_into_cell(page, index: int, text: str) -> None:
    """Replace the text of cell `index` as a person would: select all of it and type."""
    go_to_cell(page, index)
    page.keyboard.press("Enter")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Escape")


def active_cell(page):
    """The active cell's element."""
    return page.locator(".jp-Notebook .jp-Cell.jp-mod-active")
