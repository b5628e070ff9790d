"""A local GCS for tests: gcp-storage-emulator, plus the two GCS properties it lacks that we rely on.

1. The emulator ignores `ifGenerationMatch` on uploads, so a conditional write always succeeds.
   Here the upload handler remembers the precondition, and the storage layer checks it against the
   object's current generation (0 = must not exist) and answers 412 Precondition Failed, as GCS does.
2. The emulator updates an object's metadata and content in separate steps, so a concurrent reader
   can see the new generation with the old content; GCS objects change atomically. Here uploads,
   metadata reads and downloads hold one lock.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http import HTTPStatus

from gcp_storage_emulator import server as emulator_server
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects
from gcp_storage_emulator.storage import Storage

_state = threading.local()
_lock = threading.Lock()


class _PreconditionFailed(Exception):
    pass


def _insert_with_precondition(original):
    def insert(request, response, storage, *args, **kwargs):
        match = request.query.get("ifGenerationMatch")
        _state.if_generation_match = match[0] if match else None
        try:
            with _lock:
                return original(request, response, storage, *args, **kwargs)
        except _PreconditionFailed:
            response.status = HTTPStatus.PRECONDITION_FAILED
            response.json({"error": {"code": 412, "message": "conditionNotMet"}})
        finally:
            _state.if_generation_match = None
    return insert


def _serialised(original):
    def handler(*args, **kwargs):
        with _lock:
            return original(*args, **kwargs)
    return handler


def _create_file_with_precondition(original):
    def create_file(self, bucket_name, file_name, content, file_obj, file_id=None):
        expected = getattr(_state, "if_generation_match", None)
        if expected is not None:
            try:
                current = self.get_file_obj(bucket_name, file_name)["generation"]
            except NotFound:
                current = "0"
            if str(current) != str(expected):
                raise _PreconditionFailed()
        return original(self, bucket_name, file_name, content, file_obj, file_id)
    return create_file


@contextlib.contextmanager
def local_gcs(monkeypatch, bucket: str):
    """Starts the emulator on a free loopback port with `bucket`; points clients at it."""
    replacements = {objects.insert: _insert_with_precondition(objects.insert),
                    objects.get: _serialised(objects.get), objects.download: _serialised(objects.download)}
    for original, patched in replacements.items():
        monkeypatch.setattr(objects, original.__name__, patched)
    for _, handlers in emulator_server.HANDLERS:
        for method, handler in list(handlers.items()):
            if handler in replacements:
                monkeypatch.setitem(handlers, method, replacements[handler])
    monkeypatch.setattr(Storage, "create_file", _create_file_with_precondition(Storage.create_file))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = emulator_server.create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("NO_GCE_CHECK", "true")  # google-auth must not probe the GCE metadata server
    try:
        yield bucket
    finally:
        server.stop()
