"""A content-hash cache of model answers, so a re-run does not pay twice.

PRIVATE OUTPUT: the cache stores model answers to prompts built from conversation text (facet
summaries, keyword choices), keyed by a hash of the whole request. Put --llm_cache in the same
access-controlled place as private/ and give it the same retention. Entries are one small JSON file
each under PATH/<2 hex>/<sha256>.json, written through Beam's filesystems (local or gs://), so
workers share it without locking: two workers writing the same key write the same answer.
"""

from __future__ import annotations

import hashlib
import json

from apache_beam.io.filesystems import FileSystems

from backends.llm.client import Completion


def request_key(backend: str, model: str, messages: list[dict], params: dict) -> str:
    document = json.dumps({"backend": backend, "model": model, "messages": messages, "params": params},
                          sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, root: str):
        self.root = root.rstrip("/")

    def _path(self, key: str) -> str:
        return FileSystems.join(self.root, key[:2], key + ".json")

    def get(self, key: str) -> Completion | None:
        path = self._path(key)
        try:
            with FileSystems.open(path) as handle:
                data = json.loads(handle.read().decode("utf-8"))
            return Completion(data["text"], int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)))
        except Exception:  # missing, or a torn entry: a miss either way
            return None

    def put(self, key: str, completion: Completion) -> None:
        document = {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens}
        with FileSystems.create(self._path(key)) as handle:
            handle.write(json.dumps(document, ensure_ascii=False).encode("utf-8"))
