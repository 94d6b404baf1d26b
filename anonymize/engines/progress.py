"""Progress of long engine work: a thread polls the engine while a query runs and reports the stage,
the fraction done (DuckDB's ``query_progress``, Spark's task counts) and an ETA, at most one line
every ``every`` seconds and only after ``after`` seconds (short queries stay silent)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["polled", "eta_text"]


def eta_text(fraction: float, elapsed: float) -> str:
    """``'42%, ETA 1 min 10 s'`` from the fraction done and the seconds spent so far."""
    if fraction <= 0.0:
        return "starting"
    left = elapsed * (1.0 - fraction) / fraction
    if left >= 90:
        eta = f"{left / 60:.0f} min"
    else:
        eta = f"{left:.0f} s"
    return f"{100 * fraction:.0f}%, ETA {eta}"


@contextmanager
def polled(
    stage: str,
    poll: Callable[[], tuple[float, str] | None],
    progress: Callable[[str], None] | None,
    *,
    after: float = 2.0,
    every: float = 5.0,
) -> Iterator[None]:
    """While the body runs, call ``poll()`` → ``(fraction in [0, 1], detail)`` (or None when unknown)
    and report ``stage: <fraction>, ETA …, detail`` through ``progress``."""
    if progress is None:
        yield
        return
    stop = threading.Event()
    t0 = time.perf_counter()

    def run() -> None:
        last = -1e9
        while not stop.wait(0.5):
            now = time.perf_counter()
            if now - t0 < after or now - last < every:
                continue
            try:
                got = poll()
            except Exception:  # a poll racing the query's end: nothing to report
                got = None
            if got is None:
                continue
            frac, detail = got
            last = now
            progress(f"{stage}: {eta_text(min(max(frac, 0.0), 1.0), now - t0)}" + (f", {detail}" if detail else ""))

    th = threading.Thread(target=run, name=f"ppdm-progress-{stage}", daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join(timeout=2)
