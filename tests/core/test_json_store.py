import json
import multiprocessing
import os

import pytest

from core import json_store
from tests.support.gcs_emulator import local_gcs


def _increment(path: str, times: int) -> None:
    for _ in range(times):
        json_store.update_json(path, lambda doc: {"count": (doc or {"count": 0})["count"] + 1})


def test_concurrent_local_writers_lose_no_update(tmp_path):
    path = str(tmp_path / "ledger.json")
    workers = [multiprocessing.get_context("spawn").Process(target=_increment, args=(path, 25)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    assert json.load(open(path)) == {"count": 100}
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_a_failing_update_writes_nothing(tmp_path):
    path = str(tmp_path / "l.json")
    json_store.update_json(path, lambda doc: {"v": 1})

    def refuse(doc):
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        json_store.update_json(path, refuse)
    assert json.load(open(path)) == {"v": 1}


@pytest.fixture
def gcs_emulator(monkeypatch):
    with local_gcs(monkeypatch, "ledgers") as bucket:
        yield bucket


def test_a_write_that_raced_another_writer_is_retried_on_fresh_data(gcs_emulator):
    # The first attempt's mutate() lets a "concurrent writer" update the object between our read and
    # our conditional write; that write must then fail with 412 and be retried on the new content.
    path = f"gs://{gcs_emulator}/nightly/ledger.json"
    json_store.update_json(path, lambda doc: {"runs": ["a"]})
    attempts = []

    def add_b(doc):
        attempts.append(list(doc["runs"]))
        if len(attempts) == 1:
            json_store.update_json(path, lambda other: {"runs": other["runs"] + ["concurrent"]})
        return {"runs": doc["runs"] + ["b"]}

    json_store.update_json(path, add_b)
    assert attempts == [["a"], ["a", "concurrent"]]
    assert json_store.read_json_or_none(path) == {"runs": ["a", "concurrent", "b"]}


def test_the_emulator_refuses_a_stale_generation(gcs_emulator):
    from google.api_core import exceptions
    from google.cloud import storage
    bucket = storage.Client.create_anonymous_client().bucket(gcs_emulator)
    bucket.blob("x.json").upload_from_string("{}", if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("x.json").upload_from_string("{}", if_generation_match=0)
