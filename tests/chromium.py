"""Render a local HTML file in headless Chromium and look at it: a screenshot and the console's errors.

No new dependency: Chromium (Debian's ``chromium`` package) is started with ``--remote-debugging-pipe``
and spoken to over the Chrome DevTools Protocol on file descriptors 3 (we write NUL-terminated JSON
commands) and 4 (we read NUL-terminated JSON replies and events). A fresh profile directory per page,
a deadline on every wait, and the browser killed on every path (:func:`render`).

:func:`png_stats` decodes the screenshot (8-bit RGB/RGBA PNG, with zlib only) into the numbers a test
asserts on: how many distinct colours and what share of pixels are not white.

Tests use the ``chromium`` fixture (``require_chromium``): without the browser they skip with one line
saying how to enable them.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

__all__ = ["SKIP_REASON", "Rendered", "find_chromium", "png_stats", "render", "require_chromium"]

SKIP_REASON = "headless Chromium not found: apt-get install chromium (Debian) to run the HTML report tests"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
]


def find_chromium() -> str | None:
    """The Chromium executable (``PPDM_CHROMIUM`` or ``chromium`` / ``chromium-browser`` on PATH), or None."""
    env = os.environ.get("PPDM_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_chromium() -> str:
    """The Chromium executable, or skip the calling test with one line saying how to get it."""
    path = find_chromium()
    if path is None:
        pytest.skip(SKIP_REASON)
    return path


@dataclass
class Rendered:
    """What a page showed: its screenshot (PNG bytes), console/exception errors, title and body text."""

    png: bytes
    errors: list[str] = field(default_factory=list)
    title: str = ""
    text: str = ""


class _CDP:
    """One browser over the DevTools pipe: commands with ids, events collected while waiting."""

    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int, deadline: float):
        self.proc, self.wfd, self.rfd, self.deadline = proc, write_fd, read_fd, deadline
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self) -> dict:
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self.rfd], [], [], min(left, 1.0))
            if not ready:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"Chromium exited with status {self.proc.returncode}")
                continue
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its ``result`` (events arriving meanwhile are kept)."""
        self.next_id += 1
        cmd: dict = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            cmd["sessionId"] = session
        data = json.dumps(cmd).encode() + b"\0"
        while data:
            data = data[os.write(self.wfd, data) :]
        while True:
            msg = self._read_message()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, session: str | None = None) -> dict:
        """Wait for an event ``method`` (of ``session``), looking first at the ones already received."""
        for i, ev in enumerate(self.events):
            if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                return self.events.pop(i)
        while True:
            msg = self._read_message()
            if msg.get("method") == method and (session is None or msg.get("sessionId") == session):
                return msg
            self.events.append(msg)


def _errors(events: list[dict]) -> list[str]:
    """The console errors, uncaught exceptions and error log entries among the DevTools events."""
    out = []
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            out.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".rstrip())
    return out


_TRAMPOLINE = """
import os, sys
r, w = (os.dup(int(x)) for x in sys.argv[1:3])  # above 4 now: dup2 below cannot clobber the other
os.dup2(r, 3)
os.dup2(w, 4)
os.set_inheritable(3, True)  # dup2 onto the same number leaves dup's close-on-exec flag
os.set_inheritable(4, True)
os.execv(sys.argv[3], sys.argv[3:])
"""


def render(path: str | os.PathLike, *, width: int = 1200, height: int = 900, timeout: float = 60.0) -> Rendered:
    """Open ``path`` (a local HTML file) in a fresh headless Chromium, wait for its load event and a moment
    more for late errors, and return its screenshot and every error the page reported. The browser and its
    profile directory are removed on every path; a browser that hangs is killed after ``timeout`` seconds."""
    exe = require_chromium()
    url = Path(path).resolve().as_uri()
    deadline = time.monotonic() + timeout
    profile = tempfile.mkdtemp(prefix="ppdm-chromium-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    proc = None
    try:
        # the browser reads fd 3 and writes fd 4: a small Python trampoline puts the pipe ends there
        # (whatever numbers they have here) and execs it
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _TRAMPOLINE,
                str(to_browser_r),
                str(from_browser_w),
                exe,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_r, from_browser_w),
            start_new_session=True,  # its own process group: every browser process is killed with it
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        to_browser_r = from_browser_w = -1
        cdp = _CDP(proc, to_browser_w, from_browser_r, deadline)
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            cdp.send(f"{domain}.enable", session=sid)
        cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=sid,
        )
        cdp.events.clear()  # about:blank's own events are not the page's
        nav = cdp.send("Page.navigate", {"url": url}, session=sid)
        if nav.get("errorText"):
            raise RuntimeError(f"cannot open {url}: {nav['errorText']}")
        cdp.wait_event("Page.loadEventFired", sid)
        settle = time.monotonic() + 0.3  # errors logged right after load still count
        while time.monotonic() < settle:
            cdp.send("Runtime.evaluate", {"expression": "1"}, session=sid)
            time.sleep(0.05)
        shot = cdp.send("Page.captureScreenshot", {"format": "png"}, session=sid)
        info = cdp.send(
            "Runtime.evaluate",
            {"expression": "JSON.stringify([document.title, document.body.innerText])", "returnByValue": True},
            session=sid,
        )
        title, text = json.loads(info["result"]["value"])
        import base64

        errors = _errors(cdp.events)
        try:
            cdp.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        return Rendered(base64.b64decode(shot["data"]), errors, title, text)
    finally:
        for fd in (to_browser_r, to_browser_w, from_browser_r, from_browser_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group we started: the browser and its helpers
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def _unfilter(raw: bytes, width: int, height: int, bpp: int) -> np.ndarray:
    """Undo the PNG row filters (None, Sub, Up, Average, Paeth) of 8-bit samples, ``bpp`` bytes a pixel:
    ``(height, width * bpp)`` uint8. Sub and Up rows in numpy; Average and Paeth rows byte by byte."""
    stride = width * bpp
    rows = np.frombuffer(raw, dtype=np.uint8)[: height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        ftype, cur = int(rows[y, 0]), rows[y, 1:]
        if ftype == 0:
            row = cur.copy()
        elif ftype == 1:
            row = (np.cumsum(cur.reshape(width, bpp), axis=0, dtype=np.int64) % 256).astype(np.uint8).reshape(-1)
        elif ftype == 2:
            row = cur + prev  # uint8 arithmetic wraps modulo 256
        elif ftype in (3, 4):
            r = bytearray(cur.tobytes())
            up = prev.tobytes()
            for i in range(stride):
                a = r[i - bpp] if i >= bpp else 0
                b = up[i]
                if ftype == 3:
                    pred = (a + b) >> 1
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                r[i] = (r[i] + pred) & 0xFF
            row = np.frombuffer(bytes(r), dtype=np.uint8)
        else:
            raise ValueError(f"unknown PNG filter {ftype}")
        out[y] = row
        prev = row
    return out


def png_stats(png: bytes) -> dict:
    """Decode an 8-bit RGB or RGBA PNG: ``{"width", "height", "colours", "non_white"}`` — the number of
    distinct RGB colours and the share of pixels that are not (near) white."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if hdr is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = hdr
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = 3 if colour == 2 else 4
    pix = _unfilter(zlib.decompress(idat), width, height, bpp).reshape(height * width, bpp)[:, :3]
    colours = len(np.unique(pix.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)))
    non_white = int((pix < 245).any(axis=1).sum())
    return {"width": width, "height": height, "colours": colours, "non_white": non_white / (width * height)}
