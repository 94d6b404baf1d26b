from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskRequest(_message.Message):
    __slots__ = ("query_json",)
    QUERY_JSON_FIELD_NUMBER: _ClassVar[int]
    query_json: str
    def __init__(self, query_json: _Optional[str] = ...) -> None: ...

class Denial(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class AskReply(_message.Message):
    __slots__ = ("answer_json", "denial", "seq")
    ANSWER_JSON_FIELD_NUMBER: _ClassVar[int]
    DENIAL_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    answer_json: str
    denial: Denial
    seq: int
    def __init__(self, answer_json: _Optional[str] = ..., denial: _Optional[_Union[Denial, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class AuditStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AuditStatusReply(_message.Message):
    __slots__ = ("name", "version", "auditor", "rows", "answered", "denied")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    AUDITOR_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    DENIED_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    auditor: str
    rows: int
    answered: int
    denied: int
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., auditor: _Optional[str] = ..., rows: _Optional[int] = ..., answered: _Optional[int] = ..., denied: _Optional[int] = ...) -> None: ...
