from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageHeader(_message.Message):
    __slots__ = ("session", "tag", "total_length")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LENGTH_FIELD_NUMBER: _ClassVar[int]
    session: str
    tag: str
    total_length: int
    def __init__(self, session: _Optional[str] = ..., tag: _Optional[str] = ..., total_length: _Optional[int] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("header", "data")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    header: MessageHeader
    data: bytes
    def __init__(self, header: _Optional[_Union[MessageHeader, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class DeliverAck(_message.Message):
    __slots__ = ("received",)
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    received: int
    def __init__(self, received: _Optional[int] = ...) -> None: ...

class StartJobRequest(_message.Message):
    __slots__ = ("session", "job", "params_json", "parties", "timeout_seconds")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    PARTIES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    session: str
    job: str
    params_json: str
    parties: _containers.RepeatedScalarFieldContainer[str]
    timeout_seconds: float
    def __init__(self, session: _Optional[str] = ..., job: _Optional[str] = ..., params_json: _Optional[str] = ..., parties: _Optional[_Iterable[str]] = ..., timeout_seconds: _Optional[float] = ...) -> None: ...

class JobError(_message.Message):
    __slots__ = ("kind", "message")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    message: str
    def __init__(self, kind: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class StartJobReply(_message.Message):
    __slots__ = ("result_json", "error", "bytes_sent", "seconds")
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BYTES_SENT_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    error: JobError
    bytes_sent: int
    seconds: float
    def __init__(self, result_json: _Optional[str] = ..., error: _Optional[_Union[JobError, _Mapping]] = ..., bytes_sent: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class AbortRequest(_message.Message):
    __slots__ = ("session", "reason")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session: str
    reason: str
    def __init__(self, session: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AbortReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class HealthReply(_message.Message):
    __slots__ = ("name", "version", "active_sessions", "session_state", "serving", "draining", "running_sessions", "queued_sessions", "certificate_not_after", "ca_not_after", "crl_next_update", "warnings", "problems", "admitting")
    class SessionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[HealthReply.SessionState]
        PENDING: _ClassVar[HealthReply.SessionState]
        RUNNING: _ClassVar[HealthReply.SessionState]
        DONE: _ClassVar[HealthReply.SessionState]
        FAILED: _ClassVar[HealthReply.SessionState]
    UNKNOWN: HealthReply.SessionState
    PENDING: HealthReply.SessionState
    RUNNING: HealthReply.SessionState
    DONE: HealthReply.SessionState
    FAILED: HealthReply.SessionState
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_STATE_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_NOT_AFTER_FIELD_NUMBER: _ClassVar[int]
    CA_NOT_AFTER_FIELD_NUMBER: _ClassVar[int]
    CRL_NEXT_UPDATE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    ADMITTING_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    active_sessions: int
    session_state: HealthReply.SessionState
    serving: bool
    draining: bool
    running_sessions: int
    queued_sessions: int
    certificate_not_after: str
    ca_not_after: str
    crl_next_update: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    problems: _containers.RepeatedScalarFieldContainer[str]
    admitting: bool
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., active_sessions: _Optional[int] = ..., session_state: _Optional[_Union[HealthReply.SessionState, str]] = ..., serving: _Optional[bool] = ..., draining: _Optional[bool] = ..., running_sessions: _Optional[int] = ..., queued_sessions: _Optional[int] = ..., certificate_not_after: _Optional[str] = ..., ca_not_after: _Optional[str] = ..., crl_next_update: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[str]] = ..., admitting: _Optional[bool] = ...) -> None: ...
