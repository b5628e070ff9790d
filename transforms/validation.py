"""Parsing and validating one input record. Everything invalid becomes a DeadLetter with a reason."""

from __future__ import annotations

import datetime as dt
import json

from transforms.records import ROLES, Conversation, DeadLetter, Message

DEFAULT_MAX_RECORD_BYTES = 1_000_000
# Dead-lettered raw text is cut to this, so one huge bad line cannot bloat the private output.
_MAX_RAW_CHARS = 10_000

REASONS = (
    "empty_line", "invalid_utf8", "bad_json", "not_an_object", "record_too_large",
    "missing_conversation_id", "missing_user_id", "bad_timestamp", "bad_messages", "no_user_message",
    "unreadable_file",
)


def _raw_text(raw: bytes | dict) -> str:
    if isinstance(raw, dict):
        text = json.dumps(raw, default=str, ensure_ascii=False)
    else:
        text = raw.decode("utf-8", errors="backslashreplace")
    return text[:_MAX_RAW_CHARS]


def _non_empty_id(record: dict, field: str) -> str | None:
    value = record.get(field)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _parse_messages(value) -> tuple[tuple[Message, ...] | None, str]:
    if not isinstance(value, list):
        return None, f"messages must be a list, got {type(value).__name__}"
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            return None, f"messages[{index}] must be an object"
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            return None, f"messages[{index}].role must be one of {ROLES}"
        if not isinstance(content, str):
            return None, f"messages[{index}].content must be a string"
        messages.append(Message(role, content))
    return tuple(messages), ""


_INVALID = object()


def _normalised_timestamp(value):
    """The ISO-8601 string, None when absent, or _INVALID. Parquet may hold a real timestamp type."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if not isinstance(value, str):
        return _INVALID
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return _INVALID
    return value


def parse_record(raw: bytes | dict, source: str, line: int | None,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Conversation | DeadLetter:
    """A Conversation, or a DeadLetter saying why not. `raw` is a JSON line or a Parquet row."""

    def reject(reason: str, detail: str = "") -> DeadLetter:
        return DeadLetter(source=source, line=line, reason=reason, detail=detail, raw=_raw_text(raw))

    if isinstance(raw, bytes):
        if len(raw) > max_record_bytes:
            return reject("record_too_large", f"{len(raw)} bytes > cap of {max_record_bytes}")
        if not raw.strip():
            return reject("empty_line")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return reject("invalid_utf8", str(error))
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            return reject("bad_json", str(error))
    else:
        record = raw
    if not isinstance(record, dict):
        return reject("not_an_object", f"got {type(record).__name__}")
    if isinstance(raw, dict):
        size = len(json.dumps(record, default=str).encode())
        if size > max_record_bytes:
            return reject("record_too_large", f"{size} bytes > cap of {max_record_bytes}")
    conversation_id = _non_empty_id(record, "conversation_id")
    if conversation_id is None:
        return reject("missing_conversation_id", "conversation_id must be a non-empty string")
    user_id = _non_empty_id(record, "user_id")
    if user_id is None:
        return reject("missing_user_id", "user_id must be a non-empty string")
    timestamp = _normalised_timestamp(record.get("timestamp"))
    if timestamp is _INVALID:
        return reject("bad_timestamp", "timestamp must be an ISO-8601 string")
    messages, problem = _parse_messages(record.get("messages"))
    if messages is None:
        return reject("bad_messages", problem)
    if not any(m.role == "user" and m.content.strip() for m in messages):
        return reject("no_user_message", "no non-empty user turn")
    return Conversation(conversation_id=conversation_id, user_id=user_id, timestamp=timestamp, messages=messages)
