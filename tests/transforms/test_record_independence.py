"""One record must never change what happens to anyone else's (docs/privacy.md, "each record is
processed independently").

Property-based: adversarial records (deep nesting, huge numbers, lone surrogates, NUL and control
characters, duplicate keys, wrong types at every level, huge strings under the size cap, BOMs, CRLF,
non-object JSON, random bytes) are inserted at random positions among valid records. The valid
records' outcome must be what it is without them, every line must be either valid or dead-lettered
(read = valid + dead_lettered), and the job must exit 0.
"""

from __future__ import annotations

import glob
import json
import os

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to, is_empty
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.offline import UserTurnsFacetExtractor
from config.embedding import Encoder
from core.records import Conversation, DeadLetter
from synthetic.sample import generate_records
from tests.conftest import PoisonedProposer, assert_together, checked, local_pipeline
from transforms.bound_contributions import BoundUserContributions
from transforms.embed import EmbedConversations
from transforms.extract_facets import ExtractFacets
from transforms.read_conversations import ReadConversations, read_range, split_file
from transforms.validation import DEFAULT_MAX_RECORD_BYTES, is_strict_utf8, parse_record

CAP = DEFAULT_MAX_RECORD_BYTES


def _line(record) -> bytes:
    return json.dumps(record).encode()


def _adversarial_record(index: int) -> dict:
    return {"conversation_id": f"adv-{index}", "user_id": f"adv-user-{index}",
            "messages": [{"role": "user", "content": "How do I fix my bike chain?"}]}


_JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
_JSON_VALUES = st.recursive(_JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
# Where a wrong type can go: every field of a record and of a message, and the message itself.
_PATHS = (("conversation_id",), ("user_id",), ("timestamp",), ("messages",), ("messages", 0),
          ("messages", 0, "role"), ("messages", 0, "content"))


@st.composite
def _wrong_type(draw, index):
    record = _adversarial_record(index)
    path = draw(st.sampled_from(_PATHS))
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = draw(_JSON_VALUES)
    for field, prefix in (("conversation_id", f"adv-{index}-"), ("user_id", f"adv-user-{index}-")):
        if isinstance(record[field], str):  # a drawn string is of the right type: keep it recognisable
            record[field] = prefix + record[field]
    return _line(record)


@st.composite
def _with_text(draw, index, text_strategy):
    """A record with drawn text in one of its string fields (ids, role, content, timestamp)."""
    record = _adversarial_record(index)
    field = draw(st.sampled_from(("conversation_id", "user_id", "content", "role", "timestamp")))
    text = draw(text_strategy)
    if field == "content":
        record["messages"][0]["content"] = text
    elif field == "role":
        record["messages"][0]["role"] = text
    else:
        record[field] = record.get(field, "2026-11-01T") + text  # ids keep their "adv-" prefix
    return json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


_SURROGATE_TEXT = st.builds(lambda a, s, b: a + s + b, st.text(max_size=5), st.sampled_from(["\ud800", "\udfff", "\udc80"]),
                            st.text(max_size=5))
_CONTROL_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=31), min_size=1, max_size=10).map(
    lambda t: "id" + t)


def adversarial_line(index: int) -> st.SearchStrategy[bytes]:
    """One input line (no newline inside) meant to break the reader or a later step."""
    valid = _line(_adversarial_record(index))
    return st.one_of(
        st.integers(1_000, 200_000).map(  # nesting past the parser's recursion limit, in an ignored field
            lambda depth: valid[:-1] + b', "extra": ' + b"[" * depth + b"]" * depth + b"}"),
        st.integers(4_301, 20_000).map(  # an integer past Python's digit limit, in an ignored field
            lambda digits: valid[:-1] + b', "extra": ' + b"7" * digits + b"}"),
        _with_text(index, _SURROGATE_TEXT),
        _with_text(index, _CONTROL_TEXT),
        st.sampled_from([b'{"user_id": "a", "user_id": "b", "conversation_id": "adv-dup-%d", "messages": []}' % index,
                         valid[:-1] + b', "messages": []}']),  # duplicate keys
        _wrong_type(index),
        st.integers(100_000, CAP - 1_000).map(  # a huge string under the size cap
            lambda n: _line({**_adversarial_record(index), "messages": [{"role": "user", "content": "a" * n}]})),
        st.just(b"\xef\xbb\xbf" + valid),  # a byte order mark
        st.just(valid + b"\r"),  # CRLF
        _JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(_line),  # non-object JSON
        st.binary(max_size=200).filter(lambda b: b"\n" not in b),
        st.just(b"\xed\xa0\x80" + valid),  # a surrogate encoded in bytes (not UTF-8)
    )


@st.composite
def _insertions(draw, base_count: int, max_lines: int):
    """(position, line) pairs: adversarial lines and where they go among the valid ones."""
    count = draw(st.integers(1, max_lines))
    return [(draw(st.integers(0, base_count)), draw(adversarial_line(i))) for i in range(count)]


def _with_insertions(base_lines: list[bytes], insertions) -> list[bytes]:
    lines = list(base_lines)
    for position, line in sorted(insertions, key=lambda pair: -pair[0]):
        lines.insert(position, line)
    return lines


def _write(path, lines: list[bytes]) -> None:
    with open(path, "wb") as handle:
        handle.write(b"".join(line + b"\n" for line in lines))


# --- parse_record alone -----------------------------------------------------------------------------

@given(st.binary(max_size=300))
def test_parse_record_is_total_on_any_bytes(raw):
    outcome = parse_record(raw.replace(b"\n", b""), "f", 1)
    assert isinstance(outcome, (Conversation, DeadLetter))


@given(_JSON_VALUES)
def test_parse_record_is_total_on_any_json_value_and_on_any_row(value):
    for raw in (_line(value), value if isinstance(value, dict) else {"row": value}):
        assert isinstance(parse_record(raw, "f", 1), (Conversation, DeadLetter))


@given(st.data())
def test_every_adversarial_line_is_valid_or_dead_lettered_and_valid_ones_are_strict_utf8(data):
    outcome = parse_record(data.draw(adversarial_line(0)), "f", 1)
    if isinstance(outcome, Conversation):
        texts = [outcome.conversation_id, outcome.user_id, outcome.timestamp or ""]
        texts += [m.content for m in outcome.messages] + [m.role for m in outcome.messages]
        assert all(is_strict_utf8(text) for text in texts)
    else:
        assert outcome.reason and outcome.stage == "read"


@pytest.mark.parametrize("line, reason", [
    (b'{"conversation_id": "c", "user_id": "u", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "bad_json"),
    (b'{"conversation_id": "c", "user_id": "u", "x": ' + b"9" * 5_000 + b"}", "bad_json"),
    (b'{"conversation_id": "c", "conversation_id": "d", "user_id": "u", "messages": []}', "duplicate_key"),
    (json.dumps({"conversation_id": "c", "user_id": "u\ud800",
                 "messages": [{"role": "user", "content": "hi"}]}).encode(), "invalid_utf8"),
    (json.dumps({"conversation_id": "c", "user_id": "u",
                 "messages": [{"role": "user", "content": "hi \udfff"}]}).encode(), "invalid_utf8"),
])
def test_each_known_breaker_gets_its_own_reason(line, reason):
    outcome = parse_record(line, "f", 3)
    assert isinstance(outcome, DeadLetter) and outcome.reason == reason, outcome


def test_bom_crlf_nul_and_control_characters_are_accepted():
    record = {"conversation_id": "c\x00\x01", "user_id": "u\t", "messages": [{"role": "user", "content": "a\x00b"}]}
    for raw in (b"\xef\xbb\xbf" + _line(record), _line(record)):
        outcome = parse_record(raw, "f", 1)
        assert isinstance(outcome, Conversation) and outcome.conversation_id == "c\x00\x01"


# --- the reader at scale ----------------------------------------------------------------------------

BASE_RECORDS = list(generate_records(4_000, 900, seed=11))
BASE_LINES = [_line(record) for record in BASE_RECORDS]


def _read_all(path: str, split_bytes: int):
    outcomes = []
    for part in split_file(path, os.path.getsize(path), split_bytes):
        outcomes.extend(read_range(part))
    return outcomes


def _base_outcome():
    return {r["conversation_id"]: parse_record(line, "x", None) for r, line in zip(BASE_RECORDS, BASE_LINES)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(insertions=_insertions(len(BASE_LINES), 8), split_bytes=st.integers(50_000, 3_000_000))
def test_the_reader_keeps_every_valid_record_whatever_is_inserted_among_them(tmp_path_factory, insertions,
                                                                           split_bytes):
    path = str(tmp_path_factory.mktemp("reader") / "input.jsonl")
    lines = _with_insertions(BASE_LINES, insertions)
    _write(path, lines)

    outcomes = _read_all(path, split_bytes)

    valid = {o.conversation_id: o for o in outcomes if isinstance(o, Conversation)}
    dead = [o for o in outcomes if isinstance(o, DeadLetter)]
    assert len(outcomes) == len(lines)  # read = valid + dead_lettered, one outcome per line
    expected = _base_outcome()
    assert {cid: valid[cid] for cid in expected} == expected  # same records, same content
    assert all(cid.startswith("adv-") for cid in set(valid) - set(expected))
    assert all(d.reason != "unreadable_file" and d.offset is not None for d in dead)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_ranges_neither_lose_nor_repeat_a_line_at_any_split_size(tmp_path_factory, data):
    lines = data.draw(st.lists(st.sampled_from(BASE_LINES[:5] + [b"", b"x", b"{}\r"]), min_size=0, max_size=12))
    split_bytes = data.draw(st.integers(1, 400))
    path = str(tmp_path_factory.mktemp("split") / "input.jsonl")
    _write(path, lines)
    outcomes = _read_all(path, split_bytes)
    offsets = [o.offset for o in outcomes if isinstance(o, DeadLetter)]
    assert len(outcomes) == len(lines)
    assert offsets == sorted(offsets)  # ranges come back in file order and each line once
    expected_offsets, position = [], 0
    for line in lines:
        expected_offsets.append(position)
        position += len(line) + 1
    dead_positions = [expected_offsets[i] for i, line in enumerate(lines)
                      if isinstance(parse_record(line.rstrip(b"\r"), "x", None), DeadLetter)]
    assert offsets == dead_positions


def test_a_large_file_is_read_as_several_ranges_spread_over_workers(tmp_path):
    path = tmp_path / "input.jsonl"
    _write(path, BASE_LINES)
    parts = split_file(str(path), path.stat().st_size, 256 * 1024)
    assert len(parts) >= 10 and parts[0].start == 0 and parts[-1].end == path.stat().st_size
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    with local_pipeline() as pipeline:
        result = pipeline | ReadConversations(str(path), split_bytes=256 * 1024)
        assert_that(result.valid | beam.Map(lambda c: c.conversation_id),
                    equal_to([r["conversation_id"] for r in BASE_RECORDS]), label="ids")


def test_a_line_far_over_the_cap_is_dead_lettered_with_its_true_size_without_holding_it(tmp_path):
    path = tmp_path / "input.jsonl"
    _write(path, [BASE_LINES[0], b'{"x": "' + b"y" * 5_000_000 + b'"}', BASE_LINES[1]])
    outcomes = _read_all(str(path), 64 * 1024 * 1024)
    assert [type(o).__name__ for o in outcomes] == ["Conversation", "DeadLetter", "Conversation"]
    assert outcomes[1].reason == "record_too_large" and "5000009 bytes" in outcomes[1].detail
    assert len(outcomes[1].raw) <= 10_000


def test_a_crlf_line_end_does_not_count_against_the_size_cap(tmp_path):
    record = _line({**_adversarial_record(0), "pad": ""})
    at_cap = record[:-2] + b" " * (1000 - len(record)) + b'"}'  # exactly 1,000 bytes
    path = tmp_path / "input.jsonl"
    path.write_bytes(at_cap + b"\r\n" + at_cap + b"\n")
    outcomes = [o for part in split_file(str(path), path.stat().st_size) for o in read_range(part, 1000)]
    assert [type(o).__name__ for o in outcomes] == ["Conversation", "Conversation"]


# --- real I/O failures end a file early, and say how much was not read --------------------------------

def test_a_truncated_gzip_keeps_the_records_before_the_cut_and_says_the_rest_is_missing(tmp_path):
    import gzip
    whole = gzip.compress(b"".join(line + b"\n" for line in BASE_LINES[:2_000]))
    path = tmp_path / "input.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    outcomes = _read_all(str(path), 64 * 1024 * 1024)
    valid = [o for o in outcomes if isinstance(o, Conversation)]
    unreadable = [o for o in outcomes if isinstance(o, DeadLetter) and o.reason == "unreadable_file"]
    assert 500 < len(valid) < 2_000
    assert [o.conversation_id for o in valid] == [r["conversation_id"] for r in BASE_RECORDS[:len(valid)]]
    # At most the line cut in two besides: it is dead-lettered on its own.
    assert len(outcomes) - len(valid) - len(unreadable) <= 1
    assert len(unreadable) == 1 and unreadable[0].unread_bytes == 0 and "ends early" in unreadable[0].detail


def test_a_corrupt_gzip_releases_no_record_of_the_file(tmp_path):
    """gzip checks its CRC only at the end: records decoded from damaged bytes (possibly naming
    another user) must not be released before the damage shows."""
    import gzip
    whole = bytearray(gzip.compress(b"".join(line + b"\n" for line in BASE_LINES[:3_000])))
    rng = np.random.default_rng(4)
    for trial in range(30):
        damaged = bytearray(whole)
        position = int(rng.integers(20, len(damaged) - 20))
        damaged[position] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"input-{trial}.jsonl.gz"
        path.write_bytes(bytes(damaged))
        outcomes = _read_all(str(path), 64 * 1024 * 1024)
        if any(isinstance(o, DeadLetter) and o.reason == "unreadable_file" for o in outcomes):
            assert [(o.reason, o.unread_bytes) for o in outcomes] == [("unreadable_file", len(damaged))]
        else:  # the flip hit something the format does not check (e.g. the header's mtime): data intact
            assert [o.conversation_id for o in outcomes] == [r["conversation_id"] for r in BASE_RECORDS[:3_000]]


@pytest.mark.parametrize("suffix", [".jsonl.zst", ".jsonl.deflate"])
def test_a_format_whose_truncation_cannot_be_detected_is_dead_lettered_unread(tmp_path, suffix):
    path = tmp_path / f"input{suffix}"
    path.write_bytes(b"whatever is inside")
    outcomes = _read_all(str(path), 64 * 1024 * 1024)
    assert [(o.reason, o.unread_bytes) for o in outcomes] == [("unreadable_file", 18)]
    assert "recompress the file as gzip, bzip2 or xz" in outcomes[0].detail


def test_a_corrupt_parquet_file_is_one_dead_letter_for_all_of_its_bytes(tmp_path):
    path = tmp_path / "input.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 1000 + b"PAR1")
    outcomes = _read_all(str(path), 64 * 1024 * 1024)
    assert [(o.reason, o.unread_bytes) for o in outcomes] == [("unreadable_file", 1008)]


def test_a_file_that_vanishes_is_dead_lettered_with_its_size(tmp_path):
    path = tmp_path / "input.jsonl"
    _write(path, BASE_LINES[:100])
    parts = split_file(str(path), path.stat().st_size, 4096)
    path.unlink()
    outcomes = [o for part in parts for o in read_range(part)]
    assert {o.reason for o in outcomes} == {"unreadable_file"}
    assert sum(o.unread_bytes for o in outcomes) == sum(len(line) + 1 for line in BASE_LINES[:100])


# --- Parquet rows with wrong or nested types ----------------------------------------------------------

def test_parquet_rows_with_wrong_or_nested_types_dead_letter_themselves_only(tmp_path):
    good = [dict(r) for r in BASE_RECORDS[:6]]
    for r in good:
        r.pop("planted_topic")
        r.pop("source")
    columns = {key: [r[key] for r in good] for key in ("conversation_id", "user_id", "timestamp", "messages")}
    tables = {
        "ok.parquet": pa.table(columns),
        "user_struct.parquet": pa.table({**columns, "user_id": [{"id": "u", "n": 1}] * 6}),
        "content_int.parquet": pa.table({**columns, "messages": [[{"role": "user", "content": 5}]] * 6}),
        "messages_strings.parquet": pa.table({**columns, "messages": [["hello"]] * 6}),
        "timestamp_int.parquet": pa.table({**columns, "timestamp": list(range(6))}),
        "id_list.parquet": pa.table({**columns, "conversation_id": [["a", "b"]] * 6}),
        "deep.parquet": pa.table({**columns, "extra": [[[[[[1]]]]]] * 6}),
    }
    for name, table in tables.items():
        pq.write_table(table, str(tmp_path / name), row_group_size=2)
    expected = {"user_struct.parquet": "missing_user_id", "content_int.parquet": "bad_messages",
                "messages_strings.parquet": "bad_messages", "timestamp_int.parquet": "bad_timestamp",
                "id_list.parquet": "missing_conversation_id"}
    with local_pipeline() as pipeline:
        result = pipeline | ReadConversations(str(tmp_path / "*.parquet"), split_bytes=1)
        assert_that(result.valid | beam.Map(lambda c: c.conversation_id),
                    equal_to(columns["conversation_id"] * 2), label="valid")  # ok and deep (an ignored nested column)
        assert_that(result.dead_letter | beam.Map(lambda d: (d.source.rsplit("/", 1)[-1], d.reason, d.line)),
                    equal_to([(name, reason, row) for name, reason in expected.items() for row in range(1, 7)]),
                    label="dead")


# --- the per-record steps and the whole job -----------------------------------------------------------

SMALL_RECORDS = list(generate_records(48, 14, seed=5))
SMALL_LINES = [_line(record) for record in SMALL_RECORDS]


def _per_record_outcomes(pipeline, path: str, name: str):
    """(conversation id, facet, embedding) of each conversation after reading, bounding, facets and embedding, as
    the job does."""
    records = pipeline | f"read {name}" >> ReadConversations(path)
    kept = records.valid | f"bound {name}" >> BoundUserContributions(3, seed=1)
    facets = kept | f"facets {name}" >> ExtractFacets(UserTurnsFacetExtractor())
    blocks = facets.output | f"embed {name}" >> EmbedConversations(Encoder("all-MiniLM-L6-v2"), block_size=8,
                                                                    encode_batch_size=4)
    return blocks.output | f"rows {name}" >> beam.FlatMap(
        lambda b: [(c, f, e) for c, f, e in zip(b.conversation_ids, b.facets, b.embeddings)])


@pytest.fixture(scope="module")
def small_input(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("baseline") / "input.jsonl")
    _write(path, SMALL_LINES)
    return path


def _keep_their_facet_and_embedding(baseline, inserted):
    baseline = {cid: (facet, vector) for cid, facet, vector in baseline}
    base = {cid: (facet, vector) for cid, facet, vector in inserted if not cid.startswith("adv-")}
    assert base.keys() == baseline.keys()  # the same conversations kept by bounding
    for cid, (facet, vector) in baseline.items():
        assert base[cid][0] == facet
        assert np.max(np.abs(base[cid][1] - vector)) <= 1e-5


@pytest.mark.real_model
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow, HealthCheck.data_too_large])
@given(insertions=_insertions(len(SMALL_LINES), 4))
def test_valid_records_keep_their_kept_facet_and_embedding_whatever_is_inserted(tmp_path_factory, small_input,
                                                                                insertions):
    folder = tmp_path_factory.mktemp("adversarial")
    path = str(folder / "input.jsonl")
    _write(path, _with_insertions(SMALL_LINES, insertions))
    # The input without the insertions and with them, side by side in one pipeline.
    with local_pipeline() as pipeline:
        assert_together(_keep_their_facet_and_embedding, "outcomes",
                        baseline=_per_record_outcomes(pipeline, small_input, "baseline"),
                        inserted=_per_record_outcomes(pipeline, path, "inserted"))


def _run_job(path: str, output: str) -> int:
    from beam_jobs.insights import run
    return run(["--input", path, "--output", output, "--seed", "3", "--noise_seed", "4", "--num_clusters", "3",
                "--embedding_block_size", "16", "--keyword_mode", "centroid", "--progress", "off"])


def _assignments(output: str) -> dict:
    rows = [json.loads(line) for f in glob.glob(os.path.join(output, "private", "assignments", "*.jsonl"))
            for line in open(f, encoding="utf-8")]
    return {row["conversation_id"]: row["cluster_id"] for row in rows}


def _every_kind_of_line() -> list[bytes]:
    """One line of each kind adversarial_line draws (the per-record steps above get them at random): what the
    whole job gets once."""
    valid = _line(_adversarial_record(0))

    def record(index, **fields):
        return {**_adversarial_record(index), **fields}

    return [
        valid[:-1] + b', "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # nesting past the recursion limit
        valid[:-1] + b', "extra": ' + b"7" * 5_000 + b"}",  # an integer past the digit limit
        json.dumps(record(1, messages=[{"role": "user", "content": "bike \ud800"}])).encode(),  # surrogate, escaped
        json.dumps(record(2, user_id="adv-user-2\udfff"), ensure_ascii=False).encode("utf-8", "surrogatepass"),
        _line(record(3, conversation_id="adv-3-id\x00\x07\x1f")),  # NUL and control characters
        b'{"user_id": "a", "user_id": "b", "conversation_id": "adv-dup-4", "messages": []}',  # duplicate keys
        _line(record(5, messages=[{"role": "user", "content": 7}])),  # a wrong type
        _line(record(6, timestamp=["2026-11-01"])),
        _line(record(7, messages=[{"role": "user", "content": "a" * 200_000}])),  # a huge string under the cap
        b"\xef\xbb\xbf" + _line(record(8)),  # a byte order mark
        _line(record(9)) + b"\r",  # CRLF
        _line([1, {"conversation_id": "adv-10"}]),  # non-object JSON
        b"\x00\xff\xfe random \x80 bytes",
        b"\xed\xa0\x80" + _line(record(11)),  # a surrogate encoded in bytes (not UTF-8)
    ]


@pytest.mark.e2e
def test_the_whole_job_exits_0_and_accounts_for_every_kind_of_line(tmp_path):
    """The job on the small input with the lines that pass validation inserted, then with every dead-lettered
    kind inserted as well: each run exits 0 and accounts for every line, and the second assigns every
    conversation as the first does (what is dead-lettered changes nothing else)."""
    kinds = _every_kind_of_line()
    dead_kinds = [line for line in kinds if isinstance(parse_record(line.rstrip(b"\r"), "x", None), DeadLetter)]
    valid_kinds = [line for line in kinds if line not in dead_kinds]
    assert len(dead_kinds) >= 9 and len(valid_kinds) >= 4  # both runs get several kinds
    spread = len(SMALL_LINES) // len(kinds)
    with_valid = _with_insertions(SMALL_LINES, [(spread * i, line) for i, line in enumerate(valid_kinds)])
    with_all = _with_insertions(with_valid, [(spread * i + 1, line) for i, line in enumerate(dead_kinds)])
    assignments = {}
    for name, lines in (("valid", with_valid), ("all", with_all)):
        _write(tmp_path / f"{name}.jsonl", lines)
        output = tmp_path / f"out-{name}"
        assert _run_job(str(tmp_path / f"{name}.jsonl"), str(output)) == 0
        stats = json.load(open(output / "private" / "run_stats.json"))
        assert stats["read"] == len(lines) == stats["valid"] + stats["dead_lettered"]
        assert stats["read"] == stats["processed"] + stats["dead_lettered"]
        assert stats["dead_lettered"] == (len(dead_kinds) if name == "all" else 0)
        dead = [json.loads(line) for f in glob.glob(str(output / "private" / "dead_letter" / "*.jsonl"))
                for line in open(f, encoding="utf-8")]
        assert len(dead) == stats["dead_lettered"] and all(d["reason"] for d in dead)
        assignments[name] = _assignments(str(output))
    assert assignments["all"] == assignments["valid"]
    assert {c for c in assignments["valid"] if c.startswith("adv-")}  # a weird valid record got through


@pytest.mark.e2e
def test_the_reported_breakers_are_dead_lettered_alone_and_the_job_releases(tmp_path):
    """The issue's reproduction: 200 valid conversations, a deeply nested record at line 11 (the rest
    of the file used to be lost), a lone surrogate in a user turn (the job used to exit 1) and in an id
    (it used to break the assignments writer), and an integer past the digit limit."""
    valid = [_line(r) for r in generate_records(200, 60, seed=8)]
    nested = b'{"conversation_id": "n", "user_id": "n", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    surrogate_turn = json.dumps({"conversation_id": "s", "user_id": "s",
                                 "messages": [{"role": "user", "content": "bread \ud800"}]}).encode()
    surrogate_id = json.dumps({"conversation_id": "i\udc80", "user_id": "i",
                               "messages": [{"role": "user", "content": "bread"}]}).encode()
    huge_int = b'{"conversation_id": "h", "user_id": "h", "n": ' + b"1" * 5_000 + b"}"
    lines = valid[:10] + [nested] + valid[10:50] + [surrogate_turn] + valid[50:90] + [surrogate_id, huge_int] + valid[90:]
    _write(tmp_path / "input.jsonl", lines)
    assert _run_job(str(tmp_path / "input.jsonl"), str(tmp_path / "out")) == 0
    stats = json.load(open(tmp_path / "out" / "private" / "run_stats.json"))
    assert (stats["read"], stats["valid"], stats["dead_lettered"]) == (204, 200, 4)
    assert stats["dead_letter_reasons"] == {"bad_json": 2, "invalid_utf8": 2}
    assert len(_assignments(str(tmp_path / "out"))) == stats["conversations_after_bounding"]
    assert os.path.exists(tmp_path / "out" / "release" / "report.json")


# --- later per-record steps: a record that fails there is dead-lettered alone ---------------------------

class _PoisonedExtractor(UserTurnsFacetExtractor):
    """The offline extractor, except that it raises on a conversation mentioning POISON."""

    def __init__(self, batch_size: int):
        super().__init__()
        self.batch_size = batch_size

    def extract(self, conversation):
        if "POISON" in " ".join(conversation.user_turns()):
            raise RuntimeError("cannot summarise this one")
        return super().extract(conversation)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_a_facet_that_raises_dead_letters_its_conversation_only(batch_size):
    from core.records import Message, WeightedConversation
    conversations = [WeightedConversation(Conversation(f"c{i}", f"u{i}", None,
                                                       (Message("user", f"question {i}" + (" POISON" if i == 5 else "")),)),
                                          1.0) for i in range(10)]

    def only_the_poisoned_one(dead_letters):
        [dead] = dead_letters
        assert (dead.stage, dead.reason, dead.conversation_id) == ("facets", "facet_failed", "c5")
        assert "cannot summarise" in dead.detail

    with local_pipeline() as pipeline:
        facets = pipeline | beam.Create(conversations) | ExtractFacets(_PoisonedExtractor(batch_size))
        assert_that(facets.output | beam.Map(lambda f: (f.conversation_id, f.text)),
                    equal_to([(f"c{i}", f"question {i}") for i in range(10) if i != 5]), label="facets")
        assert_that(facets.dead_letter, checked(only_the_poisoned_one), label="dead")


@pytest.mark.real_model
def test_a_text_the_model_cannot_embed_is_dead_lettered_alone_and_the_rest_keep_their_vectors():
    from backends.embedding import embed_texts
    from core.records import Facet
    texts = [f"how do I cook rice number {i}" for i in range(7)]
    facets = [Facet(f"c{i}", f"u{i}", 1.0, text) for i, text in enumerate(texts)]
    # A lone surrogate gets past nothing upstream now; here it stands for any text the tokenizer rejects.
    facets.insert(3, Facet("bad", "u-bad", 1.0, "rice \ud800"))
    alone = {f"c{i}": embed_texts("all-MiniLM-L6-v2", [text])[0] for i, text in enumerate(texts)}

    def the_rest_keep_their_vectors(embedded_rows):
        rows = dict(embedded_rows)
        assert sorted(rows) == sorted(f"c{i}" for i in range(7))
        assert max(float(np.max(np.abs(rows[c] - alone[c]))) for c in rows) <= 1e-5

    def only_the_bad_text(dead_letters):
        [dead] = dead_letters
        assert (dead.stage, dead.reason, dead.conversation_id) == ("embed", "embedding_failed", "bad")

    with local_pipeline() as pipeline:
        embedded = pipeline | beam.Create(facets) | EmbedConversations(Encoder("all-MiniLM-L6-v2"), block_size=8)
        assert_that(embedded.output | beam.FlatMap(lambda b: list(zip(b.conversation_ids, b.embeddings))),
                    checked(the_rest_keep_their_vectors), label="rows")
        assert_that(embedded.dead_letter, checked(only_the_bad_text), label="dead")


class _PoisonedSelector:
    def setup(self):
        pass

    def select(self, facets, embeddings, max_keywords):
        if any("POISON" in facet for facet in facets):
            raise ValueError("selector broke")
        return [["python"] for _ in facets]


def test_a_keyword_selection_that_raises_dead_letters_its_conversation_only():
    from core.records import ConversationBlock
    from transforms.keyword_histograms import SelectKeywords
    block = ConversationBlock([f"c{i}" for i in range(5)], [f"u{i}" for i in range(5)], np.ones(5),
                              ["a", "b", "POISON", "d", "e"], np.zeros((5, 4), dtype=np.float32),
                              cluster_ids=np.array([0, 0, 1, 1, 1]))

    def only_the_poisoned_one(dead_letters):
        [dead] = dead_letters
        assert (dead.stage, dead.reason, dead.conversation_id) == ("select_keywords", "keyword_selection_failed", "c2")

    with local_pipeline() as pipeline:
        selection = pipeline | beam.Create([block]) | SelectKeywords(_PoisonedSelector(), ("python",), 3)
        assert_that(selection.output, equal_to([("u0", (0, "python")), ("u1", (0, "python")),
                                                ("u3", (1, "python")), ("u4", (1, "python"))]), label="pairs")
        assert_that(selection.dead_letter, checked(only_the_poisoned_one), label="dead")


def _proposals(pipeline, facets, name):
    from transforms.keyword_set.propose_keywords import ProposeKeywords
    proposer = PoisonedProposer(raise_on="POISON", broken_on="BROKEN")
    return pipeline | f"create {name}" >> beam.Create(facets) | f"propose {name}" >> ProposeKeywords(proposer, 3)


def test_a_keyword_proposal_that_fails_dead_letters_its_conversation_only():
    from core.records import Facet
    clean = [Facet(f"c{i}", f"u{i % 4}", 1.0, f"sourdough bread baking question {i} oven starter") for i in range(12)]
    poisoned = clean[:3] + [Facet("bad", "u-bad", 1.0, "bread POISON")] + clean[3:8] + [
        Facet("odd", "u1", 1.0, "bread BROKEN")] + clean[8:]

    def the_others_propose_what_they_do_without_them(baseline, pairs):
        assert baseline
        # Every other conversation proposes exactly what it proposes without the failing ones.
        assert sorted(pairs) == sorted(baseline)

    def only_the_failing_ones(dead):
        assert sorted((d.stage, d.reason, d.conversation_id) for d in dead) == [
            ("propose_keywords", "keyword_proposal_failed", "bad"),
            ("propose_keywords", "keyword_proposal_failed", "odd")]
        details = {d.conversation_id: d.detail for d in dead}
        assert "the proposer broke" in details["bad"] and "NoneType" in details["odd"]

    with local_pipeline() as pipeline:
        baseline, proposed = _proposals(pipeline, clean, "clean"), _proposals(pipeline, poisoned, "poisoned")
        assert_that(baseline.dead_letter, is_empty(), label="dead without them")
        assert_together(the_others_propose_what_they_do_without_them, "proposals",
                        baseline=baseline.output, pairs=proposed.output)
        assert_that(proposed.dead_letter, checked(only_the_failing_ones), label="dead")


def test_the_private_writers_never_fail_on_a_row():
    from transforms.write_outputs import json_line
    assert json_line({"text": "ünïcode"}) == '{"text": "ünïcode"}'  # readable where it can be
    line = json_line({"conversation_id": "x\ud800", "detail": "bad \udfff"})
    line.encode("utf-8")  # what the text sink does with each line: must not raise
    assert json.loads(line) == {"conversation_id": "x\ud800", "detail": "bad \udfff"}


def test_run_stats_count_dead_letters_of_every_stage_and_the_unread_bytes():
    from transforms.write_outputs import dead_letter_summary
    summary = dead_letter_summary([(("read", "bad_json"), (3, 0)), (("read", "unreadable_file"), (2, 700)),
                                   (("embed", "embedding_failed"), (1, 0))])
    assert summary == {"dead_letter_reasons": {"bad_json": 3, "embedding_failed": 1, "unreadable_file": 2},
                       "dead_lettered_by_stage": {"embed": 1, "read": 5}, "dead_lettered": 6,
                       "unreadable_file_ranges": 2, "unread_bytes": 700}
