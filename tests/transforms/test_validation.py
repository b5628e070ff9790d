import datetime as dt
import json

import pytest

from core.records import Conversation, DeadLetter
from synthetic.sample import MALFORMED_KINDS, malformed_line
from transforms.validation import parse_record

GOOD = {"conversation_id": "c1", "user_id": "u1", "timestamp": "2026-11-01T10:00:00Z",
        "messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "How do I bake bread?"},
                     {"role": "assistant", "content": "Like this."}], "extra": "ignored"}

EXPECTED_REASON = {
    "bad_json": "bad_json",
    "invalid_utf8": "invalid_utf8",
    "missing_user_id": "missing_user_id",
    "empty_conversation_id": "missing_conversation_id",
    "messages_not_a_list": "bad_messages",
    "no_user_message": "no_user_message",
    "wrong_content_type": "bad_messages",
    "not_an_object": "not_an_object",
    "oversized": "record_too_large",
}


def test_valid_json_line_becomes_a_conversation():
    parsed = parse_record(json.dumps(GOOD).encode(), "f.jsonl", 1)
    assert isinstance(parsed, Conversation)
    assert parsed.conversation_id == "c1" and parsed.user_id == "u1"
    assert parsed.user_turns() == ["How do I bake bread?"]


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_every_malformed_kind_is_dead_lettered_with_its_reason(kind):
    parsed = parse_record(malformed_line(kind, 3), "f.jsonl", 7)
    assert isinstance(parsed, DeadLetter)
    assert parsed.reason == EXPECTED_REASON[kind]
    assert parsed.source == "f.jsonl" and parsed.line == 7


@pytest.mark.parametrize("mutation,reason", [
    (lambda r: r.update(user_id=17), "missing_user_id"),
    (lambda r: r.update(user_id="   "), "missing_user_id"),
    (lambda r: r.pop("conversation_id"), "missing_conversation_id"),
    (lambda r: r.update(timestamp="yesterday"), "bad_timestamp"),
    (lambda r: r.update(timestamp=12345), "bad_timestamp"),
    (lambda r: r.update(messages=[{"role": "robot", "content": "hi"}]), "bad_messages"),
    (lambda r: r.update(messages=[{"role": "user", "content": "   "}]), "no_user_message"),
    (lambda r: r.update(messages=[]), "no_user_message"),
    (lambda r: r.update(messages=["hello"]), "bad_messages"),
])
def test_wrong_types_and_missing_fields_are_rejected(mutation, reason):
    record = json.loads(json.dumps(GOOD))
    mutation(record)
    parsed = parse_record(json.dumps(record).encode(), "f", 1)
    assert isinstance(parsed, DeadLetter) and parsed.reason == reason


def test_timestamp_is_optional():
    record = dict(GOOD)
    record.pop("timestamp")
    assert isinstance(parse_record(json.dumps(record).encode(), "f", 1), Conversation)


def test_blank_line_is_dead_lettered_not_dropped():
    parsed = parse_record(b"   ", "f", 2)
    assert isinstance(parsed, DeadLetter) and parsed.reason == "empty_line"


def test_size_cap_applies_before_parsing():
    parsed = parse_record(json.dumps(GOOD).encode(), "f", 1, max_record_bytes=50)
    assert isinstance(parsed, DeadLetter) and parsed.reason == "record_too_large"


def test_parquet_row_with_native_timestamp_is_accepted():
    row = dict(GOOD, timestamp=dt.datetime(2026, 11, 1, 10, tzinfo=dt.timezone.utc))
    parsed = parse_record(row, "f.parquet", 1)
    assert isinstance(parsed, Conversation) and parsed.timestamp.startswith("2026-11-01T10:00")


def test_dead_letter_keeps_raw_text_readably_but_bounded():
    parsed = parse_record(malformed_line("oversized", 0), "f", 1)
    assert len(parsed.raw) <= 10_000
    invalid = parse_record(malformed_line("invalid_utf8", 0), "f", 1)
    assert "\\xff" in invalid.raw
