"""What the gRPC servicer needs of the daemon that hosts it: a protocol type, not an import of the daemon."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from parties import jobs as jobs_mod
from parties.guards.policy import SessionRequest

if TYPE_CHECKING:
    from parties.config import Limits, PartyConfig
    from parties.guards.policy import SessionGuard
    from parties.identity.tls import Credentials
    from parties.proto.ppdm.v1 import party_pb2 as pb
    from parties.runtime.admission import AdmissionQueue
    from parties.runtime.grpc_channel import PeerPool
    from parties.runtime.metrics import DaemonMetrics
    from parties.runtime.sessions import Session, SessionManager, SessionState

__all__ = ["DaemonHost"]


class DaemonHost(Protocol):
    """What the servicer needs of the daemon that hosts it (:class:`parties.runtime.daemon.Daemon`).

    A protocol type rather than an import of the daemon, which imports this module.
    """

    me: str
    config: PartyConfig
    limits: Limits
    log: logging.Logger
    creds: Credentials
    sessions: SessionManager
    pool: PeerPool
    admission: AdmissionQueue
    metrics: DaemonMetrics

    def not_serving(self) -> str | None: ...

    def health_reply(self, reply: pb.HealthReply) -> pb.HealthReply: ...

    @property
    def guards(self) -> Sequence[SessionGuard]: ...

    def job_function(self, info: jobs_mod.JobInfo, request: SessionRequest) -> jobs_mod.JobFn: ...

    async def ping(self, peer: str, sid: str) -> SessionState: ...

    def refuse_session(self, key: str, parties: Iterable[str], reason: str) -> None: ...

    def on_session_fail(self, s: Session, error: BaseException, source: str | None) -> None: ...
