"""Parsing and validating one input record. Everything invalid becomes a DeadLetter with a reason.

`parse_record` is total: whatever a record holds, it returns a Conversation or a DeadLetter and never
raises, so one record can never stop the reading of the records after it (user-level DP assumes a
user's records change only that user's contribution). What is rejected, and why (docs/input.md):

- `record_too_large`: over --max_record_bytes (as read, or as JSON for a Parquet row).
- `empty_line`: a blank line.
- `invalid_utf8`: bytes that are not UTF-8, or an id/role/text/timestamp that is not strict UTF-8
  (a lone surrogate written as a JSON escape such as "\\ud800": it crashes the tokenizer and the
  output writers).
- `bad_json`: not JSON, or JSON that Python cannot hold (nesting deeper than the interpreter's
  recursion limit, an integer of more than 4,300 digits), even in a field the job ignores.
- `duplicate_key`: an object with the same key twice; parsers disagree on which one counts, so
  which user a record belongs to would be ambiguous.
- `not_an_object`, `missing_conversation_id`, `missing_user_id`, `bad_timestamp`, `bad_messages`,
  `no_user_message`: the schema (ids are non-empty strings, messages a list of {role, content}
  objects with a known role and string content, at least one non-blank user turn).
- `invalid_record`: anything else that makes parsing raise (kept as a guard; no known input does).

A UTF-8 byte order mark at the start of a line and a CRLF line end are accepted.
"""

from __future__ import annotations

import datetime as dt
import json

from config.reading import DEFAULT_MAX_RECORD_BYTES
from core.records import ROLES, Conversation, DeadLetter, Message

# Dead-lettered raw text is cut to this, so one huge bad line cannot bloat the private output.
_MAX_RAW_CHARS = 10_000
UTF8_BOM = b"\xef\xbb\xbf"

REASONS = (
    "empty_line", "invalid_utf8", "bad_json", "duplicate_key", "not_an_object", "record_too_large",
    "missing_conversation_id", "missing_user_id", "bad_timestamp", "bad_messages", "no_user_message",
    "invalid_record", "unreadable_file",
)


class _DuplicateKey(ValueError):
    pass


def _object_without_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _DuplicateKey(f"key {duplicate[:100]!r} appears more than once in one object")
    return record


def _raw_text(raw: bytes | dict) -> str:
    if isinstance(raw, dict):
        try:
            text = json.dumps(raw, default=str, ensure_ascii=False)
        except (ValueError, TypeError, RecursionError):
            text = "<a row that cannot be written as JSON>"
    else:
        text = raw[: _MAX_RAW_CHARS * 4].decode("utf-8", errors="backslashreplace")
    return text[:_MAX_RAW_CHARS]


def is_strict_utf8(text: str) -> bool:
    """False for a str holding lone surrogates (which have no UTF-8 encoding)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _non_empty_id(record: dict, field: str) -> str | None:
    value = record.get(field)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _parse_messages(value) -> tuple[tuple[Message, ...] | None, str, str]:
    """(messages, reason, detail); messages is None when invalid."""
    if not isinstance(value, list):
        return None, "bad_messages", f"messages must be a list, got {type(value).__name__}"
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            return None, "bad_messages", f"messages[{index}] must be an object"
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            return None, "bad_messages", f"messages[{index}].role must be one of {ROLES}"
        if not isinstance(content, str):
            return None, "bad_messages", f"messages[{index}].content must be a string"
        if not is_strict_utf8(content):
            return None, "invalid_utf8", f"messages[{index}].content is not strict UTF-8 (a lone surrogate)"
        messages.append(Message(role, content))
    return tuple(messages), "", ""


_INVALID = object()


def _normalised_timestamp(value):
    """The ISO-8601 string, None when absent, or _INVALID. Parquet may hold a real timestamp type."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if not isinstance(value, str) or not is_strict_utf8(value):
        return _INVALID
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return _INVALID
    return value


def parse_record(raw: bytes | dict, source: str, line: int | None,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, offset: int | None = None,
                 record_bytes: int | None = None) -> Conversation | DeadLetter:
    """A Conversation, or a DeadLetter saying why not; never raises. `raw` is a JSON line (bytes,
    without its line end) or a Parquet row; `line` and `offset` say where it was (when known).
    `record_bytes` is the line's whole length when the reader kept only its beginning in `raw`."""

    def reject(reason: str, detail: str = "") -> DeadLetter:
        return DeadLetter(source=source, line=line, offset=offset, reason=reason, detail=detail,
                          raw=_raw_text(raw))

    try:
        return _parse(raw, max_record_bytes, reject, record_bytes)
    except Exception as error:  # a guard: the checks below are meant to leave nothing that raises
        return reject("invalid_record", f"{type(error).__name__}: {str(error)[:200]}")


def _parse(raw: bytes | dict, max_record_bytes: int, reject, record_bytes: int | None) -> Conversation | DeadLetter:
    if isinstance(raw, bytes):
        size = len(raw) if record_bytes is None else record_bytes
        if size > max_record_bytes:
            return reject("record_too_large", f"{size} bytes > cap of {max_record_bytes}")
        if raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM):]
        if not raw.strip():
            return reject("empty_line")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return reject("invalid_utf8", str(error))
        try:
            record = json.loads(text, object_pairs_hook=_object_without_duplicate_keys)
        except _DuplicateKey as error:
            return reject("duplicate_key", str(error))
        except RecursionError:
            return reject("bad_json", "nested deeper than the parser can follow")
        except ValueError as error:  # JSONDecodeError, and integers past Python's digit limit
            return reject("bad_json", str(error)[:200])
    else:
        record = raw
    if not isinstance(record, dict):
        return reject("not_an_object", f"got {type(record).__name__}")
    if not isinstance(raw, bytes):
        try:
            # As the row's JSON line would be (UTF-8, not \u escapes), so both formats meet the same cap.
            size = len(json.dumps(record, default=str, ensure_ascii=False).encode("utf-8", "backslashreplace"))
        except RecursionError:
            return reject("record_too_large", "nested deeper than the JSON writer can follow")
        if size > max_record_bytes:
            return reject("record_too_large", f"{size} bytes > cap of {max_record_bytes}")
    conversation_id = _non_empty_id(record, "conversation_id")
    if conversation_id is None:
        return reject("missing_conversation_id", "conversation_id must be a non-empty string")
    user_id = _non_empty_id(record, "user_id")
    if user_id is None:
        return reject("missing_user_id", "user_id must be a non-empty string")
    for field, value in (("conversation_id", conversation_id), ("user_id", user_id)):
        if not is_strict_utf8(value):
            return reject("invalid_utf8", f"{field} is not strict UTF-8 (a lone surrogate)")
    timestamp = _normalised_timestamp(record.get("timestamp"))
    if timestamp is _INVALID:
        return reject("bad_timestamp", "timestamp must be an ISO-8601 string")
    messages, reason, problem = _parse_messages(record.get("messages"))
    if messages is None:
        return reject(reason, problem)
    if not any(m.role == "user" and m.content.strip() for m in messages):
        return reject("no_user_message", "no non-empty user turn")
    return Conversation(conversation_id=conversation_id, user_id=user_id, timestamp=timestamp, messages=messages)
