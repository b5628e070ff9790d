"""Read-modify-write of small JSON documents that concurrent jobs share (ledger, report index).

Local paths: an exclusive fcntl lock on PATH.lock around the read-modify-write, and the new
document written to a temporary file and renamed over the old one, so a reader never sees half a
file. gs:// paths: the object's generation is read with the document and the write is conditional
on it (if_generation_match; 0 = "must not exist yet"); a concurrent writer makes the write fail
with 412 and the update is retried on the fresh document.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import tempfile
import time
from collections.abc import Callable

MAX_ATTEMPTS = 20


class ConcurrentUpdateError(RuntimeError):
    pass


def _split_gcs(path: str) -> tuple[str, str]:
    bucket, _, name = path[len("gs://"):].partition("/")
    if not bucket or not name:
        raise ValueError(f"not a gs://bucket/object path: {path}")
    return bucket, name


def _gcs_client():
    from google.cloud import storage
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        return storage.Client.create_anonymous_client()
    return storage.Client()


def _update_gcs(path: str, mutate: Callable[[dict | None], dict]) -> dict:
    from google.api_core import exceptions
    bucket_name, name = _split_gcs(path)
    bucket = _gcs_client().bucket(bucket_name)
    for attempt in range(MAX_ATTEMPTS):
        blob = bucket.get_blob(name)
        if blob is not None and not blob.generation:
            raise ConcurrentUpdateError(f"{path}: the store reported no generation; refusing an unconditional write")
        # Pin the download to the generation just read, so content and generation always match.
        current, generation = (None, 0) if blob is None else (
            json.loads(bucket.blob(name, generation=blob.generation).download_as_bytes()), blob.generation)
        updated = mutate(current)
        try:
            bucket.blob(name).upload_from_string(json.dumps(updated, indent=2), content_type="application/json",
                                                 if_generation_match=generation)
            return updated
        except exceptions.PreconditionFailed:
            time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
    raise ConcurrentUpdateError(f"{path}: gave up after {MAX_ATTEMPTS} conflicting concurrent updates")


@contextlib.contextmanager
def _locked(path: str):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _update_local(path: str, mutate: Callable[[dict | None], dict]) -> dict:
    with _locked(path):
        current = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                current = json.load(handle)
        updated = mutate(current)
        folder = os.path.dirname(os.path.abspath(path))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp", encoding="utf-8") as tmp:
            json.dump(updated, tmp, indent=2)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, path)
        return updated


def update_json(path: str, mutate: Callable[[dict | None], dict]) -> dict:
    """Applies `mutate` (current document or None -> new document) atomically; returns the result.
    `mutate` may run more than once (on GCS conflicts) and may raise to abort without writing."""
    if path.startswith("gs://"):
        return _update_gcs(path, mutate)
    return _update_local(path, mutate)


def read_json_or_none(path: str) -> dict | None:
    if path.startswith("gs://"):
        bucket_name, name = _split_gcs(path)
        blob = _gcs_client().bucket(bucket_name).get_blob(name)
        return None if blob is None else json.loads(blob.download_as_bytes())
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
