"""A minimal Chrome DevTools Protocol client for the browser tests: Debian's headless
chromium, driven over one websocket (the `websockets` package of the lock), no browser
download and no Playwright. Enough to load a page, press keys, click, read the DOM and take a
screenshot."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium")
WAIT_S = 60.0  # how long a step may take before the test gives up (a hang, not a timing)

KEYS = {
    "Enter": {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
}


class Browser:
    """Headless chromium with one page (a flat session on the browser's websocket)."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1200,1400",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT_S
        while not (active.is_file() and len(active.read_text().split()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port, path = active.read_text().split()[:2]
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{port}{path}", max_size=64 << 20
        ).__enter__()
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, False
        )
        self.session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> Any:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv(timeout=WAIT_S))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        """The next event `method` (those already received first)."""
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[i]
                    return event
            self.events.append(json.loads(self.ws.recv(timeout=WAIT_S)))

    def load(self, url: str | None = None) -> None:
        """Navigate to `url` (None: reload) and wait for the load event."""
        self.events.clear()
        if url is None:
            self.call("Page.reload", {"ignoreCache": True})
        else:
            self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str) -> None:
        """Poll `expression` until it is truthy: for what the page does after its load event
        (Chromium applies `autofocus` at a later rendering step, so a key pressed straight
        after the load can reach no field when the machine is busy)."""
        deadline = time.monotonic() + WAIT_S
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {WAIT_S:.0f} s: {expression}")
            time.sleep(0.05)

    def press(self, key: str) -> None:
        """One key down and up, as a person types it (a character, or a name in KEYS)."""
        spec = KEYS.get(key) or {
            "key": key,
            "text": key,
            "code": f"Digit{key}" if key.isdigit() else f"Key{key.upper()}",
            "windowsVirtualKeyCode": ord(key.upper()),
        }
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", **spec})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **spec})

    def press_and_load(self, key: str) -> None:
        """A key that submits the page: wait for the next page's load event."""
        self.events.clear()
        self.press(key)
        self.wait_event("Page.loadEventFired")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
