
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that

from synthetic.sample import MALFORMED_KINDS, generate_records, write_sample
from tests.conftest import checked, local_pipeline
from transforms.read_conversations import ReadConversations


def _read(pattern, check_valid, check_dead):
    """Reads the files in a pipeline; check_valid(the conversations) and check_dead(the dead letters) run as its
    assert_thats."""
    with local_pipeline() as pipeline:
        result = pipeline | ReadConversations(pattern)
        assert_that(result.valid, checked(check_valid), label="valid")
        assert_that(result.dead_letter, checked(check_dead), label="dead")


def test_jsonl_gzip_and_parquet_are_read_and_every_line_is_accounted_for(tmp_path):
    write_sample(str(tmp_path / "a.jsonl"), 40, 10, seed=1, malformed=len(MALFORMED_KINDS))
    write_sample(str(tmp_path / "b.jsonl.gz"), 30, 10, seed=2, malformed=3)
    rows = list(generate_records(20, 5, seed=3))
    pq.write_table(pa.Table.from_pylist(rows), str(tmp_path / "c.parquet"))

    def all_valid_read(valid):
        assert len(valid) == 40 + 30 + 20
        assert len({c.conversation_id for c in valid}) == 90

    def all_malformed_dead_lettered(dead):
        assert len(dead) == len(MALFORMED_KINDS) + 3
        assert {d.reason for d in dead} >= {"bad_json", "invalid_utf8", "record_too_large", "missing_user_id"}

    _read(str(tmp_path / "*"), all_valid_read, all_malformed_dead_lettered)


def test_corrupt_file_is_dead_lettered_and_other_files_still_read(tmp_path):
    write_sample(str(tmp_path / "good.jsonl"), 10, 3, seed=1)
    (tmp_path / "broken.jsonl.gz").write_bytes(b"this is not gzip at all")

    def good_file_read(valid):
        assert len(valid) == 10

    def broken_file_dead_lettered(dead):
        assert [d.reason for d in dead] == ["unreadable_file"]
        assert dead[0].source.endswith("broken.jsonl.gz")

    _read(str(tmp_path / "*"), good_file_read, broken_file_dead_lettered)


def test_pattern_matching_nothing_fails(tmp_path):
    with pytest.raises(Exception, match="No files|matched|match"):
        with local_pipeline() as pipeline:
            _ = pipeline | ReadConversations(str(tmp_path / "nothing-*.jsonl"))
