import os
import pickle
import uuid

# Before anything imports google-auth (it reads these at import time): never probe the GCE metadata
# server (a link-local address) for credentials; tests talk to loopback only.
os.environ["NO_GCE_CHECK"] = "true"
os.environ["GCE_METADATA_HOST"] = "127.0.0.1:9"
os.environ["GCE_METADATA_IP"] = "127.0.0.1:9"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import apache_beam as beam  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# CI draws the same examples on every run (a red CI must be reproducible, and must not come and go
# with the draw); elsewhere each run explores new ones.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def local_pipeline() -> beam.Pipeline:
    # The DirectRunner's in-process engine, without its Prism attempt (see beam_jobs.insights).
    return beam.Pipeline(runner="FnApiRunner")


class Collector:
    """Runs a pipeline and hands back the contents of chosen PCollections."""

    def __init__(self, folder):
        self._folder = folder
        self._paths = {}

    def __call__(self, pcoll, name: str):
        path = os.path.join(self._folder, f"{name}-{uuid.uuid4().hex}.pkl")
        self._paths[name] = path

        def dump(items):
            with open(path, "wb") as handle:
                pickle.dump(items, handle)

        _ = pcoll | f"collect {name}" >> beam.combiners.ToList() | f"dump {name}" >> beam.Map(dump)

    def result(self, name: str):
        with open(self._paths[name], "rb") as handle:
            return pickle.load(handle)


@pytest.fixture
def collector(tmp_path):
    return Collector(str(tmp_path))


class PoisonedProposer:
    """The offline keyword proposer, except that it raises for a batch holding a facet that contains
    `raise_on` (case-insensitive) and answers a facet containing `broken_on` with something that is not
    a list of keywords: what a failing proposal looks like to ProposeKeywords."""

    def __init__(self, raise_on: str, broken_on: str | None = None):
        from backends.offline_keywords import FrequentTermsKeywordProposer
        self._inner = FrequentTermsKeywordProposer()
        self._raise_on, self._broken_on = raise_on.lower(), broken_on.lower() if broken_on else None

    def setup(self):
        self._inner.setup()

    def teardown(self):
        pass

    def propose(self, facets, max_keywords):
        if any(self._raise_on in facet.lower() for facet in facets):
            raise RuntimeError("the proposer broke")
        return [None if self._broken_on and self._broken_on in facet.lower() else proposed
                for facet, proposed in zip(facets, self._inner.propose(facets, max_keywords))]
