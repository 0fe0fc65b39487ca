"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no websocket
library needed): launch headless Chromium, open a page, record every request, console message
and exception, evaluate JavaScript and take screenshots."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class Browser:
    """Headless Chromium driven over fds 3 (commands in) and 4 (replies out)."""

    def __init__(self, binary: str, profile: Path, timeout: float = 90.0) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # keep our ends away from 3 and 4, which the child needs
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child_r, from_child_w)]
        os.close(to_child_r)
        os.close(from_child_w)
        child_in, child_out = high

        def wire() -> None:  # in the child, before exec
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # our own fds are close-on-exec; 3 and 4 (dup2) are inherited
            preexec_fn=wire,
        )
        os.close(child_in)
        os.close(child_out)
        self._write = os.fdopen(to_child_w, "wb", buffering=0)
        self._read = os.fdopen(from_child_r, "rb", buffering=0)
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._reader_thread = threading.Thread(target=self._reader, daemon=True)
        self._reader_thread.start()
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)

    def _reader(self) -> None:
        buffer = b""
        while True:
            chunk = self._read.read(65536)
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                self._messages.put(json.loads(message))

    def send(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = self.session
        self._write.write(json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if message.get("method") == method:
                return message
            self.events.append(message)

    def open(self, url: str, width: int, height: int = 900, mobile: bool = False) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )
        # via about:blank, so that opening the same URL again is a full load, not a jump
        self.send("Page.navigate", session=True, url="about:blank")
        self.wait_for("Page.loadEventFired")
        self.drain()
        self.events.clear()
        self.send("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        self.settle()

    def settle(self) -> None:
        """Wait for two painted frames, then a task queued after them (was a fixed 200 ms
        after each load). The report's script does its work (tables, plots, self-test) at
        DOMContentLoaded, before the load event, and sets no timer of its own; what a load
        still queues (a CSP violation event, an error in a timer or a frame callback) has had
        its turn by then (tests/report/test_render.py checks a page that does both)."""
        self.evaluate(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame("
            "() => setTimeout(r, 0))))"
        )

    def evaluate(self, expression: str) -> Any:
        reply = self.send(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply.get("result", {}).get("value")

    def drain(self) -> None:
        """Move pending events into ``events``."""
        while True:
            try:
                self.events.append(self._messages.get_nowait())
            except queue.Empty:
                return

    def requests(self) -> list[str]:
        self.drain()
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def errors(self) -> list[str]:
        self.drain()
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(
                    " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
        return out

    def screenshot(self, path: Path, width: int, mobile: bool = False) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=min(height, 8000),
            deviceScaleFactor=1,
            mobile=mobile,
        )
        # two animation frames: the resize (and the plots' redraw on it) runs before the
        # first, the second comes after that frame was painted (was a fixed 150 ms)
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self.timeout = 5.0
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader_thread.join(timeout=10)  # the pipe's end: no thread left for later tests
        self._write.close()
