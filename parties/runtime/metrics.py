"""A daemon's Prometheus metrics (``[metrics] address = "127.0.0.1:9464"`` in ``party.toml``; off by default).

Served by ``prometheus_client`` (its exposition format, its HTTP server, in a thread of the daemon),
on loopback, or on any address behind the daemon's own mTLS (``tls = true``: the scraper presents a
certificate of the party's CA). Every series is about the daemon's operation, never a value derived
from private data:

=============================================  =========================================================
``ppdm_sessions_started_total{job}``            sessions started here (admitted and running)
``ppdm_sessions_finished_total{job}``           sessions whose job ended successfully here
``ppdm_sessions_failed_total{job,reason}``      failed sessions by kind: timeout, peer, refused, job,
                                                internal, queue (timed out waiting for a slot), drain
``ppdm_refusals_total{guard,rule}``             StartJob refused by a session guard (``rule``: the
                                                setting, e.g. ``dp.budget``), or by the daemon itself
``ppdm_peer_bytes_sent_total{peer}`` & co.      protocol bytes and messages sent to / received from
                                                each peer
``ppdm_protocol_seconds{job}``                  a session's run time (histogram)
``ppdm_sessions_running``, ``_queued``          now
``ppdm_serving``                                1 while serving, 0 while draining or unusable
``ppdm_privacy_budget_remaining{analyst,data}`` ε left per analyst and data key ([dp] ledgers)
``ppdm_audit_state_bytes``                      size of the audit state file ([audit])
``ppdm_tls_not_after_seconds{what}``            expiry (Unix time) of the certificate, the CA and the
                                                revocation list (``what``: certificate, ca, crl)
``ppdm_tls_expiring{what}``                     1 when that date is less than 7 days away
=============================================  =========================================================
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["DaemonMetrics", "MetricsServer"]

log = logging.getLogger("ppdm.metrics")

SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, float("inf"))


class _Gauges(Collector):
    """Gauges read at scrape time from the daemon (a callable returning ``(name, help, labels, samples)``)."""

    def __init__(self, read: Callable[[], Iterable[tuple[str, str, list[str], list[tuple[list[str], float]]]]]):
        self._read = read

    def describe(self) -> list:
        return []  # read at scrape time only (not while the daemon is being built)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            families = list(self._read())
        except Exception as e:  # a scrape must not break the daemon; it says so in its log
            log.warning("metrics: reading the daemon's state failed: %s", e.__class__.__name__)
            return
        for name, help_, labels, samples in families:
            g = GaugeMetricFamily(name, help_, labels=labels)
            for values, v in samples:
                g.add_metric(values, v)
            yield g


class DaemonMetrics:
    """The counters a daemon moves as it works, and the gauges it is read for at scrape time."""

    def __init__(self, read_gauges: Callable[[], Iterable[Any]] | None = None):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.started = Counter("ppdm_sessions_started", "Sessions started here", ["job"], registry=r)
        self.finished = Counter("ppdm_sessions_finished", "Sessions whose job ended successfully", ["job"], registry=r)
        self.failed = Counter("ppdm_sessions_failed", "Sessions that failed, by kind", ["job", "reason"], registry=r)
        self.refusals = Counter("ppdm_refusals", "StartJob refused, by guard and rule", ["guard", "rule"], registry=r)
        self.bytes_sent = Counter("ppdm_peer_bytes_sent", "Protocol bytes sent to a peer", ["peer"], registry=r)
        self.messages_sent = Counter("ppdm_peer_messages_sent", "Protocol messages sent", ["peer"], registry=r)
        self.bytes_received = Counter("ppdm_peer_bytes_received", "Protocol bytes received", ["peer"], registry=r)
        self.messages_received = Counter(
            "ppdm_peer_messages_received", "Protocol messages received", ["peer"], registry=r
        )
        self.seconds = Histogram(
            "ppdm_protocol_seconds", "Run time of a session's job", ["job"], buckets=SECONDS_BUCKETS, registry=r
        )
        if read_gauges is not None:
            r.register(_Gauges(read_gauges))
        self._lock = threading.Lock()

    # ---- what the daemon calls
    def session_started(self, job: str) -> None:
        self.started.labels(job).inc()

    def session_ended(self, job: str, seconds: float, failure: str | None) -> None:
        """A started session ended: ``failure`` is its kind (``timeout``, ``peer``, ...) or None."""
        self.seconds.labels(job).observe(seconds)
        if failure is None:
            self.finished.labels(job).inc()
        else:
            self.failed.labels(job, failure).inc()

    def session_not_run(self, job: str, reason: str) -> None:
        """A session admitted or queued here that never ran (``queue``: no slot by its deadline; ``drain``)."""
        self.failed.labels(job, reason).inc()

    def refused(self, guard: str, rule: str) -> None:
        self.refusals.labels(guard, rule).inc()

    def sent(self, peer: str, nbytes: int) -> None:
        self.bytes_sent.labels(peer).inc(nbytes)
        self.messages_sent.labels(peer).inc()

    def received(self, peer: str, nbytes: int) -> None:
        self.bytes_received.labels(peer).inc(nbytes)
        self.messages_received.labels(peer).inc()


class MetricsServer:
    """``prometheus_client``'s HTTP server for one registry: on loopback, or behind mTLS with the party's files."""

    def __init__(
        self,
        registry: CollectorRegistry,
        address: str,
        *,
        certfile: str | None = None,
        keyfile: str | None = None,
        cafile: str | None = None,
    ):
        host, _, port = address.rpartition(":")
        tls: dict[str, Any] = {}
        if certfile is not None:
            tls = {"certfile": certfile, "keyfile": keyfile, "client_cafile": cafile, "client_auth_required": True}
        self._server, self._thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry, **tls)
        self.port = self._server.server_port
        self.address = f"{host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
