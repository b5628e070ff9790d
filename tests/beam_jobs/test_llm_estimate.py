"""--llm_steps' default per backend (the local model runs the per-topic steps only; an explicit value
wins) and the estimate of a run's model calls and time that the job logs before it reads any data
(beam_jobs/llm_estimate.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re

import numpy as np
import pytest

from backends import factory
from backends.centre_decoder import DRAFTS, ROUNDS
from backends.exemplars import evolve_exemplars
from backends.llm import config as llm_config
from backends.llm.client import Completion
from backends.llm.config import make_caller
from backends.llm.steps import LLMClusterNamer, LLMExemplarWriter, LLMFacetExtractor, LLMLabelWriter
from backends.offline import EmbeddingKeywordSelector, UserTurnsFacetExtractor
from beam_jobs import insights, llm_estimate
from beam_jobs.llm_estimate import (
    BYTES_PER_CONVERSATION,
    LOCAL_SECONDS_PER_CALL,
    centre_name_calls,
    estimate,
    estimate_line,
    exemplar_calls,
    input_size,
)
from config.embedding import Encoder
from config.insights import InsightsOptions, insights_params
from config.llm import STEPS, LLMParams, default_steps
from synthetic.sample import write_sample
from tests.support.llm_server import FakeChatServer
from transforms import read_conversations


def _params(*extra):
    return insights_params(InsightsOptions(["--input", "x", "--output", "y", *extra]))


REMOTE = ("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m")


# ---- the default steps per backend ----

def test_the_local_backend_runs_only_its_per_topic_steps_by_default():
    local = _params("--llm_backend", "local").llm
    assert local.llm_steps is None and local.steps == default_steps("local") == ("names", "exemplars")
    resolved = local.resolved()
    assert resolved.llm_steps == "names,exemplars" and resolved.resolved() == resolved
    # what the factory builds from it: the facet and the keyword selection stay offline, the namer is the model
    assert isinstance(factory.make_facet_extractor(1000, resolved), UserTurnsFacetExtractor)
    assert isinstance(factory.make_keyword_selector(("python",), Encoder(), 0.3, resolved), EmbeddingKeywordSelector)
    assert isinstance(factory.make_cluster_namer(resolved), LLMClusterNamer)
    assert isinstance(factory.make_label_writer(resolved), LLMLabelWriter)
    assert isinstance(factory.make_exemplar_writer(resolved), LLMExemplarWriter)


@pytest.mark.parametrize("backend", [("--llm_backend", "offline"), REMOTE, ("--llm_backend", "vertex")])
def test_the_other_backends_run_every_step_by_default(backend):
    llm = _params(*backend).llm
    assert llm.steps == STEPS == default_steps(llm.llm_backend)


def test_an_explicit_llm_steps_wins_over_the_backends_default():
    local = _params("--llm_backend", "local", "--llm_steps", "facets,keywords").llm
    assert local.steps == ("facets", "keywords") and local.resolved().llm_steps == "facets,keywords"
    assert isinstance(factory.make_facet_extractor(1000, local.resolved()), LLMFacetExtractor)
    assert not local.resolved().uses("names")
    remote = _params(*REMOTE, "--llm_steps", "names").llm
    assert remote.steps == ("names",) and not remote.resolved().uses("facets")
    with pytest.raises(ValueError, match="--llm_steps must be a comma-separated subset"):
        _params("--llm_backend", "local", "--llm_steps", "facets,nonsense")


def test_the_report_shows_the_steps_that_ran_on_the_model():
    assert _params("--llm_backend", "local").llm.public_config()["llm_steps"] == "names,exemplars"
    assert _params("--llm_backend", "local", "--llm_steps", "keywords").llm.public_config()["llm_steps"] == "keywords"
    # unchanged for the other backends: every step
    assert _params().llm.public_config()["llm_steps"] == "facets,keywords,names,exemplars"


# ---- the estimate ----

def test_the_input_size_gives_about_its_conversations_without_reading_them(tmp_path):
    plain, packed = str(tmp_path / "day.jsonl"), str(tmp_path / "day.jsonl.gz")
    lines = write_sample(plain, 600, 200, seed=2)
    with open(plain, "rb") as source, gzip.open(packed, "wb") as out:
        out.write(source.read())
    size = input_size(plain)
    assert size.files == 1 and size.bytes == (tmp_path / "day.jsonl").stat().st_size
    assert size.conversations == -(-size.bytes // BYTES_PER_CONVERSATION)
    # the generated sample's conversations are shorter than the real mix's, so the estimate is low but near
    assert lines / 4 <= size.conversations <= lines * 2
    # a compressed file counts as the bytes it holds, not as its smaller size
    packed_size = input_size(packed)
    assert packed_size.bytes < size.bytes / 2 and size.conversations / 3 <= packed_size.conversations <= size.conversations * 3
    both = input_size(str(tmp_path / "day.jsonl*"))
    assert both.files == 2 and both.conversations == pytest.approx(size.conversations + packed_size.conversations, abs=1)


def _size(conversations: int):
    return llm_estimate.InputSize(files=1, bytes=conversations * BYTES_PER_CONVERSATION, conversations=conversations)


def test_the_local_estimate_counts_per_topic_calls_and_prices_them():
    params = _params("--llm_backend", "local", "--llm_model", "qwen2.5-coder-0.5b", "--num_clusters", "20",
                     "--centre_decoder")
    steps = {s.step: s for s in estimate(params, _size(13000))}
    assert {s for s, v in steps.items() if v.on} == {"names", "centre_names"}
    assert steps["names"].calls == 20 and steps["centre_names"].calls == 20 * centre_name_calls(5)
    # the per-conversation steps are off, and priced so the line can say what turning them on costs
    assert steps["facets"].calls == steps["keywords"].calls == 13000 and not steps["facets"].on
    for s in steps.values():
        assert s.seconds == pytest.approx(s.calls * LOCAL_SECONDS_PER_CALL[s.step])
    line = estimate_line(params, _size(13000))
    assert line.startswith("LLM estimate (--llm_backend local, qwen2.5-coder-0.5b, --llm_steps names,exemplars): ")
    assert f"names 20, centre_names {20 * centre_name_calls(5)}" in line
    assert "off: facets 13,000, keywords 13,000 would add ~26,000 calls, ~" in line
    assert line.endswith("Change with --llm_steps (any of facets,keywords,names,exemplars).")
    # the 1.5B's calls cost more than the 0.5B's
    bigger = _params("--llm_backend", "local", "--llm_model", "qwen2.5-coder-1.5b", "--num_clusters", "20")
    small = {s.step: s.seconds for s in estimate(params, _size(13000))}
    assert all(s.seconds > small[s.step] for s in estimate(bigger, _size(13000)))


def test_the_estimate_follows_an_explicit_llm_steps_and_the_remote_sampling():
    local = _params("--llm_backend", "local", "--llm_model", "qwen2.5-coder-0.5b", "--llm_steps", "facets,names",
                    "--num_clusters", "10")
    on = {s.step: s.calls for s in estimate(local, _size(5000)) if s.on}
    assert on == {"facets": 5000, "names": 10, "centre_names": 10 * centre_name_calls(5)}
    without_decoder = _params("--llm_backend", "local", "--centre_decoder", "false", "--num_clusters", "10")
    assert {s.step: s.calls for s in estimate(without_decoder, _size(5000)) if s.on} == {"names": 10}
    # a remote backend samples m = 200 conversations a topic for keywords, and its time is its server's
    remote = _params(*REMOTE, "--num_clusters", "10")
    steps = {s.step: s for s in estimate(remote, _size(5000))}
    assert steps["keywords"].calls == 2000 and all(s.on and s.seconds is None for s in steps.values())
    assert "time not estimated (the server's)" in estimate_line(remote, _size(5000))
    # an unknown GGUF file has no measured call time
    gguf = _params("--llm_backend", "local", "--llm_model", "/models/other.gguf")
    assert "no measured call time for this model" in estimate_line(gguf, _size(100))
    # without --llm_model the line names the packaged model the backend will load (the first installed)
    assert re.match(r"LLM estimate \(--llm_backend local, qwen2\.5-coder-(0\.5|1\.5)b, ",
                    estimate_line(_params("--llm_backend", "local"), _size(100)))


class _Writer:
    """A chat client answering the label and exemplar prompts with distinct candidates, as many as asked."""

    calls = 0

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt=0):
        type(self).calls += 1
        count = _max_items(json_output)
        seed = hashlib.sha256(json.dumps(messages).encode()).hexdigest()[:8]
        if "labels" in json.dumps(json_output):
            items = [{"name": f"Topic name {seed} {i}", "description": f"People ask about {seed} {i}."}
                     for i in range(count)]
            return Completion(json.dumps({"labels": items}))
        return Completion(json.dumps({"requests": [f"How do I do thing {seed} {i}?" for i in range(count)]}))

    def close(self):
        pass


def _max_items(schema) -> int:
    if isinstance(schema, dict):
        if "maxItems" in schema:
            return schema["maxItems"]
        return max([_max_items(v) for v in schema.values()] + [0])
    return 0


class _Nearer:
    """Points of candidates: random unit rows, each batch nearer the centre's direction than the one before
    (as variations of the best are), and no two near-duplicates."""

    def __init__(self):
        self.batches = 0

    def __call__(self, texts):
        self.batches += 1
        toward = np.full(64, 3.0 * self.batches / 8)
        rows = np.stack([np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=64)
                         + toward for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("keywords", [5, 2, 12])
def test_the_per_topic_call_counts_are_what_the_writers_make(keywords):
    """The estimate's calls a topic are the LLM writers' own: the centre decoder's search (DRAFTS candidates,
    ROUNDS round, one name) and the exemplar search (--exemplars_per_topic 3 of 20 candidates), when every
    round's variations are nearer the centre than their parents. A round whose best were all varied before
    makes no calls (evolve_exemplars), so on real runs the estimate is an upper bound."""
    params = LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1", pseudonymize="off")
    topic = {"name": "Cooking", "description": "Recipes.", "keywords": [f"keyword {i}" for i in range(keywords)],
             "voted_category": "Food"}
    centre = np.ones(64, dtype=np.float32)

    def calls(writer, count, candidates, rounds) -> int:
        writer._caller = make_caller(params, client=_Writer())
        _Writer.calls = 0
        evolve_exemplars(writer, topic, centre, _Nearer(), count, candidates, rounds)
        return _Writer.calls

    assert ROUNDS == 1 and calls(LLMLabelWriter(params), 1, DRAFTS, ROUNDS) == centre_name_calls(keywords)
    assert calls(LLMExemplarWriter(params), 3, 20, 1) == exemplar_calls(keywords, 3, 20, 1)
    assert calls(LLMExemplarWriter(params), 3, 20, 3) == exemplar_calls(keywords, 3, 20, 3)


# ---- before any data is read ----

class _Records(logging.Handler):
    def __init__(self, order: list):
        super().__init__()
        self.order, self.records = order, []

    def emit(self, record):
        if getattr(record, "event", None) == "llm_estimate":
            self.order.append("estimate")
            self.records.append(record)


@pytest.fixture
def order(monkeypatch):
    """What happened, in order: "estimate" when the line is logged, "read" when any input range is read."""
    happened: list[str] = []
    reader = read_conversations.read_range

    def read_range(*args, **kwargs):
        happened.append("read")
        return reader(*args, **kwargs)

    monkeypatch.setattr(read_conversations, "read_range", read_range)
    handler = _Records(happened)
    logger = logging.getLogger("urania.insights")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield happened, handler
    logger.removeHandler(handler)


def test_the_local_default_is_estimated_before_the_pipeline_is_built(tmp_path, monkeypatch, order):
    """With --llm_backend local and no --llm_steps, the line (names on, facets and keywords off, with what
    they would add) is logged before the job sets up its engine and builds the pipeline; no model is
    needed: the run stops there."""
    happened, handler = order
    data = str(tmp_path / "day.jsonl")
    write_sample(data, 300, 100, seed=4)
    monkeypatch.setattr(llm_config, "preflight", lambda params: None)

    class Stopped(Exception):
        pass

    def stop(*args, **kwargs):
        happened.append("engine")
        raise Stopped

    monkeypatch.setattr(insights, "use_local_engine", stop)
    with pytest.raises(Stopped):
        insights.run(["--input", data, "--output", str(tmp_path / "out"), "--llm_backend", "local",
                      "--llm_model", "qwen2.5-coder-0.5b", "--num_clusters", "8", "--progress", "off"])
    assert happened == ["estimate", "engine"]
    record = handler.records[0]
    assert record.calls == {"names": 8, "centre_names": 8 * centre_name_calls(5)}
    assert set(record.calls_off) == {"facets", "keywords"}
    assert record.seconds == round(8 * LOCAL_SECONDS_PER_CALL["names"]
                                   + 8 * centre_name_calls(5) * LOCAL_SECONDS_PER_CALL["centre_names"])
    assert "--llm_steps names,exemplars" in record.getMessage() and "Change with --llm_steps" in record.getMessage()


@pytest.mark.e2e
def test_a_run_logs_its_estimate_before_it_reads_a_record(tmp_path, order):
    """A whole run on generated data against a loopback OpenAI-compatible server: the estimate comes
    before the first input range is read, and names the calls the run then makes."""
    happened, handler = order
    data = str(tmp_path / "day.jsonl")
    write_sample(data, 150, 60, seed=5)
    with FakeChatServer() as server:
        assert insights.run(["--input", data, "--output", str(tmp_path / "out"), *REMOTE[:2], "--llm_base_url",
                             server.base_url, "--llm_model", "fake", "--pseudonymize", "off", "--llm_steps", "names",
                             "--centre_decoder", "false", "--num_clusters", "3",
                             "--min_cluster_size", "5", "--seed", "3", "--progress", "off"]) == 0
        named = sum(1 for entry in server.log if entry["step"] == "names")
    assert happened[0] == "estimate" and "read" in happened
    assert handler.records[0].calls == {"names": 3} and named <= 3
