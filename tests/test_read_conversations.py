
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_jobs.generate_sample import MALFORMED_KINDS, generate_records, write_sample
from tests.conftest import local_pipeline
from transforms.read_conversations import ReadConversations


def _read(pattern, collector):
    with local_pipeline() as pipeline:
        result = pipeline | ReadConversations(pattern)
        collector(result.valid, "valid")
        collector(result.dead_letter, "dead")
    return collector.result("valid"), collector.result("dead")


def test_jsonl_gzip_and_parquet_are_read_and_every_line_is_accounted_for(tmp_path, collector):
    write_sample(str(tmp_path / "a.jsonl"), 40, 10, seed=1, malformed=len(MALFORMED_KINDS))
    write_sample(str(tmp_path / "b.jsonl.gz"), 30, 10, seed=2, malformed=3)
    rows = list(generate_records(20, 5, seed=3))
    pq.write_table(pa.Table.from_pylist(rows), str(tmp_path / "c.parquet"))

    valid, dead = _read(str(tmp_path / "*"), collector)

    assert len(valid) == 40 + 30 + 20
    assert len(dead) == len(MALFORMED_KINDS) + 3
    assert {d.reason for d in dead} >= {"bad_json", "invalid_utf8", "record_too_large", "missing_user_id"}
    assert len({c.conversation_id for c in valid}) == 90


def test_corrupt_file_is_dead_lettered_and_other_files_still_read(tmp_path, collector):
    write_sample(str(tmp_path / "good.jsonl"), 10, 3, seed=1)
    (tmp_path / "broken.jsonl.gz").write_bytes(b"this is not gzip at all")
    valid, dead = _read(str(tmp_path / "*"), collector)
    assert len(valid) == 10
    assert [d.reason for d in dead] == ["unreadable_file"]
    assert dead[0].source.endswith("broken.jsonl.gz")


def test_pattern_matching_nothing_fails(tmp_path):
    with pytest.raises(Exception, match="No files|matched|match"):
        with local_pipeline() as pipeline:
            _ = pipeline | ReadConversations(str(tmp_path / "nothing-*.jsonl"))
