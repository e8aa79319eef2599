"""A tiny headless-Chromium driver over the DevTools protocol, for the report tests.

Why our own ~200 lines instead of Selenium or Playwright: Chromium's ``--remote-debugging-pipe``
speaks the DevTools protocol over two inherited file descriptors (NUL-terminated JSON), so the
Python standard library is enough — no chromedriver whose version must match the browser, no
browser download, no websocket package. We need only a handful of commands: open a page,
collect console messages, exceptions and network requests, evaluate JavaScript and take a
screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def find_chromium() -> str:
    """The Chromium binary to use; raises (so the test fails, never skips) when there is none."""
    env = os.environ.get("KAFKA_CHAOS_CHROMIUM")
    for candidate in ([env] if env else []) + list(CHROMIUM_CANDIDATES):
        if candidate and Path(candidate).exists():
            return candidate
    found = shutil.which("chromium") or shutil.which("google-chrome")
    if found:
        return found
    raise RuntimeError("no Chromium found (set KAFKA_CHAOS_CHROMIUM); browser tests need one")


@dataclass
class PageLoad:
    """What Chromium saw while loading one page."""

    url: str
    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log_entries: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    load_seconds: float = 0.0

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors, as text."""
        out = [
            " ".join(str(a.get("value", a.get("description", ""))) for a in c.get("args", []))
            for c in self.console
            if c.get("type") in ("error", "assert")
        ]
        out += [e.get("exceptionDetails", {}).get("text", "exception") for e in self.exceptions]
        out += [e.get("text", "") for e in self.log_entries if e.get("level") == "error"]
        return out

    @property
    def csp_violations(self) -> list[str]:
        """Every message of the page's Content-Security-Policy refusing something, at any level."""
        texts = [e.get("text", "") for e in self.log_entries]
        texts += [" ".join(str(a.get("value", "")) for a in c.get("args", []))
                  for c in self.console]
        return [t for t in texts if "Content Security Policy" in t]

    @property
    def foreign_requests(self) -> list[str]:
        """Every request other than the page itself (inline ``data:`` URLs do not count)."""
        return [u for u in self.requests if u != self.url and not u.startswith("data:")]


class Chromium:
    """One headless Chromium process with one page, driven over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str | None = None, width: int = 1400, height: int = 1000) -> None:
        self.binary = binary or find_chromium()
        self.width, self.height = width, height
        self._profile = tempfile.mkdtemp(prefix="kc-chromium-")
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        self._navigated: dict[str, Any] = {}  # the last Page.navigate answer (frame, loader)
        self._session: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Chromium:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the browser and attach to a fresh page."""
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # in the child: Chromium reads commands on fd 3, answers on 4
            # Move both ends above 10 first so that dup2 onto 3/4 cannot clobber either of them.
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [
            self.binary,
            "--headless",
            "--no-sandbox",
            "--disable-background-networking",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-sync",
            "--disable-component-update",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            f"--window-size={self.width},{self.height}",
            "about:blank",
        ]
        stderr = self._stderr_file()
        # close_fds=False: fd 3/4 must survive exec; Python's own fds are non-inheritable anyway.
        self.proc = subprocess.Popen(
            args,
            preexec_fn=wire_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        os.close(stderr)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        if page is None:
            page = self.call("Target.createTarget", url="about:blank")
        target_id = page["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target_id, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Network", "Log", "Inspector"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _stderr_file(self) -> int:
        # Kept in the profile: a page that never loads is explained by what Chromium said.
        return os.open(Path(self._profile) / "stderr.log", os.O_WRONLY | os.O_CREAT, 0o600)

    def _why_silent(self) -> str:
        """What is known when Chromium did not answer: its process, a crashed page, its stderr."""
        alive = "running" if self.proc and self.proc.poll() is None else (
            f"exited {self.proc.returncode}" if self.proc else "not started")
        crashed = any(e.get("method") == "Inspector.targetCrashed" for e in self._events)
        log = Path(self._profile) / "stderr.log"
        tail = log.read_text(errors="replace").splitlines()[-5:] if log.exists() else []
        # what the page got as far as (a hang, not a crash: which step of the load it reached)
        seen = [str(e.get("method")) for e in self._events][-12:]
        return (f"Chromium {alive}, page {'crashed' if crashed else 'not crashed'}; "
                f"navigation: {self._navigated}; last events since it: {seen}; "
                f"last stderr lines: {tail}")

    def close(self) -> None:
        """Stop the browser (only the process we started) and remove its profile."""
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(Exception):  # best effort; killed below if it hangs
                self.call("Browser.close", timeout=5)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol ---------------------------------------------------------------------------

    def call(self, method: str, session: bool = False, timeout: float = 60, **params: Any) -> Any:
        """Send one command and wait for its answer; events seen meanwhile are kept."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for m in self._read(deadline):
                if m.get("id") == msg["id"]:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m.get("result", {})
                self._events.append(m)

    def _read(self, deadline: float) -> list[dict[str, Any]]:
        remaining = deadline - time.monotonic()
        ready = select.select([self._from_chrome], [], [], remaining)[0] if remaining > 0 else []
        if not ready:
            raise TimeoutError(f"Chromium did not answer in time: {self._why_silent()}")
        chunk = os.read(self._from_chrome, 1 << 20)
        if not chunk:
            raise RuntimeError("Chromium closed the DevTools pipe")
        self._buffer += chunk
        *messages, self._buffer = self._buffer.split(b"\0")
        return [json.loads(m) for m in messages if m]

    def _wait_event(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self._events):
            if any(e.get("method") == "Inspector.targetCrashed" for e in self._events):
                raise RuntimeError(f"the page crashed: {self._why_silent()}")
            self._events.extend(self._read(deadline))

    # -- what the tests use -------------------------------------------------------------------

    def open(self, path: Path, timeout: float = 300) -> PageLoad:
        """Load a local file, wait for its load event and a quiet moment, report what happened.

        ``timeout`` only tells a hung browser from a slow one: on a shared machine under a
        whole suite's load a page that loads in 0.2 s alone has taken over a minute. How fast
        a report opens is measured by ``python -m bench report --browser``.
        """
        url = path.resolve().as_uri()
        self._events.clear()
        t0 = time.monotonic()
        self._navigated = self.call("Page.navigate", session=True, url=url)
        self._wait_event("Page.loadEventFired", timeout)
        load_seconds = time.monotonic() - t0
        # Let late scripts run (and fail, if they would) before collecting.
        self.evaluate("new Promise(r => setTimeout(r, 300))")
        result = PageLoad(url=url, load_seconds=load_seconds)
        for e in self._events:
            p = e.get("params", {})
            match e.get("method"):
                case "Runtime.consoleAPICalled":
                    result.console.append(p)
                case "Runtime.exceptionThrown":
                    result.exceptions.append(p)
                case "Log.entryAdded":
                    result.log_entries.append(p.get("entry", {}))
                case "Network.requestWillBeSent":
                    result.requests.append(p.get("request", {}).get("url", ""))
        return result

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page (awaiting promises) and return its JSON value."""
        r = self.call(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def screenshot(self, out: Path, full_page: bool = True) -> Path:
        """Save a PNG of the page (the whole page by default) and return its path."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            m = self.call("Page.getLayoutMetrics", session=True)
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": self.width,
                "height": min(size["height"], 16000),
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(data))
        return out

    def screenshot_element(self, selector: str, out: Path) -> Path:
        """Save a PNG of one element (e.g. a plot), for a closer look than the whole page."""
        rect = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return {x: r.left + window.scrollX, "
            "y: r.top + window.scrollY, width: r.width, height: r.height}; })()"
        )
        data = self.call(
            "Page.captureScreenshot",
            session=True,
            format="png",
            clip={**rect, "scale": 1},
            captureBeyondViewport=True,
        )["data"]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(data))
        return out
