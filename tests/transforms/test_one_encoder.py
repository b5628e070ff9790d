"""One encoder per run (config.embedding.Encoder): every text a run embeds, private or public, goes through the
run's one encoder, declared once by the embedding flags (EmbeddingParams.encoder). A public text embedded by
another encoder than the conversations' (the torch model under --embedding_backend onnx-int8, say) would be
ranked, classified and projected against vectors of another space.

The topic stages run in-process (transforms/engine.py's local engine) on the plan the job builds
(beam_jobs/insights.topic_plan, with its factory-made backends), with every stage that embeds switched on, and
the embedding model replaced by a fake that records the (model, backend, device) of each call: each must be the
run's encoder, and each consumer must have embedded something (so that none passes by embedding nothing)."""

from __future__ import annotations

import dataclasses
import hashlib
import sys

import numpy as np
import pytest

from backends import embedding
from backends.facet_set import load_facet_set
from backends.keyword_set import KeywordSet, load_keyword_set
from config.embedding import Encoder
from config.insights import InsightsOptions, insights_params
from core.records import Facet
from core.run_context import RunContext
from publishing.previous_nights import PreviousNights
from transforms import dp_kmeans
from transforms.dp_kmeans import ThemeSeeds
from transforms.embed import _EmbedBatchFn
from transforms.engine import LocalEngine
from transforms.topic_stages import topic_stages

DIMENSION = 384
RUN_ENCODER = Encoder("all-MiniLM-L6-v2", "onnx-int8", "cpu")

# Who embeds what: (module, function) of a frame on the stack of an embedding call -> the consumer it stands for.
CONSUMERS = {
    ("transforms.embed", "process"): "conversations",
    ("backends.offline", "setup"): "keyword selector (K)",
    ("transforms.centroid_keywords", "setup"): "centroid keywords (K)",
    ("transforms.dp_kmeans", "basis_keyword_vectors"): "pca basis (bundled K)",
    ("backends.keyword_categories", "setup"): "keyword categories (K, bundled K)",
    ("transforms.theme_histogram", "setup"): "theme rule (K)",
    ("transforms.dp_kmeans", "anchors"): "theme anchors (K)",
    ("transforms.facet_histograms", "setup"): "facet descriptions",
    ("transforms.decode_centres", "setup"): "decoder's theme rule (K)",
    ("transforms.decode_centres", "_embedded"): "decoder's names (bank, candidates)",
    ("transforms.write_exemplars", "points_of"): "exemplar candidates",
    ("backends.llm.keyword_mapping", "setup"): "LLM selector's K",
    ("backends.llm.keyword_mapping", "nearest"): "LLM-proposed words",
    ("backends.offline_keywords", "refine"): "keyword-set refiner",
}


def _fake_vectors(texts) -> np.ndarray:
    """A unit vector per text, a function of the text alone (as the real encoders' are)."""
    rows = [np.random.default_rng(list(hashlib.blake2b(str(t).encode(), digest_size=8).digest())).standard_normal(
        DIMENSION) for t in texts]
    vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), DIMENSION)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _consumers() -> set[str]:
    frame, found = sys._getframe(2), set()
    while frame is not None:
        consumer = CONSUMERS.get((frame.f_globals.get("__name__"), frame.f_code.co_name))
        if consumer is not None:
            found.add(consumer)
        frame = frame.f_back
    return found


@pytest.fixture
def recorded(monkeypatch):
    """[((model, backend, device), consumers on the stack)] of every embedding call and model load."""
    calls = []

    def embed_texts(name, texts, batch_size=64, backend="torch", device="cpu"):
        calls.append(((name, backend, device), _consumers()))
        return _fake_vectors(texts)

    real_public = embedding.embed_public_texts

    def embed_public_texts(name, texts, backend="torch", device="cpu"):
        calls.append(((name, backend, device), _consumers()))
        return real_public(name, texts, backend=backend, device=device)  # memoised; misses reach the fake

    monkeypatch.setattr(embedding, "embed_texts", embed_texts)
    monkeypatch.setattr(embedding, "embed_public_texts", embed_public_texts)
    monkeypatch.setattr(embedding, "load_model",
                        lambda name, device="cpu": calls.append(((name, "torch", device), _consumers())))
    monkeypatch.setattr(embedding, "load_onnx_model",
                        lambda name, backend: calls.append(((name, backend, "cpu"), _consumers())))
    monkeypatch.setattr(embedding, "load_native_model",
                        lambda name: calls.append(((name, "native", "cpu"), _consumers())))
    dp_kmeans._basis.cache_clear()  # the pca basis is memoised per (params, encoder): embed it again here
    yield calls
    dp_kmeans._basis.cache_clear()


def _keyword_set() -> KeywordSet:
    """The bundled set and two keywords of no category, which the categories fill in by embedding them and the
    bundled set's keywords (backends/keyword_categories.py)."""
    bundled = load_keyword_set(None)
    return dataclasses.replace(bundled, keywords=bundled.keywords + ("levain feeding", "helm charts"),
                               categories=bundled.categories + (None, None))


def _params():
    return insights_params(InsightsOptions([
        "--input", "x.jsonl", "--output", "out", "--embedding_backend", RUN_ENCODER.backend,
        "--embedding_model", RUN_ENCODER.model, "--embedding_device", RUN_ENCODER.device,
        "--keyword_mode", "both", "--themes", "--facets", "concern", "--centre_decoder", "--exemplars_per_topic", "1",
        "--num_clusters", "3", "--min_cluster_size", "1", "--seed", "1"]))


def test_every_text_of_a_run_is_embedded_by_its_one_encoder(recorded):
    from backends import factory
    from beam_jobs import insights
    from config.llm import LLMParams

    params = _params()
    assert params.embedding.encoder == RUN_ENCODER
    context = RunContext("20261102T000000-test", None, "x.jsonl", "out", "out/run", "out/private")
    plan = insights.topic_plan(params, None, _keyword_set(), None, context, DIMENSION)
    assert plan.encoder == RUN_ENCODER
    # The bundled request kinds without their multilingual model (a model of the facet file's own, not the run's),
    # and a risen theme to seed DP k-means with (its anchor is K's vectors by the theme rule).
    request_kind = dataclasses.replace(load_facet_set().facets[1], multilingual=None)
    plan = dataclasses.replace(plan, facets=plan.facets + ((1, request_kind),),
                               previous=PreviousNights(seed_themes=(plan.categories.names[0],)))

    # The conversations, as the job's embedding stage embeds them (with the plan's encoder, as build_pipeline does).
    topics = ("python unit tests", "sourdough bread", "retirement savings")
    facets = [Facet(f"c{i}", f"u{i % 40}", 1.0, f"{topics[i % 3]} question {i}") for i in range(90)]
    embed = _EmbedBatchFn(plan.encoder, 16)
    embed.setup()
    blocks = list(embed.process(facets))
    stages = topic_stages(LocalEngine(), blocks, plan, None)
    assert stages.released.topics and stages.themes is not None and stages.facets is not None

    ThemeSeeds(plan.previous.seed_themes, plan.keywords, plan.categories, plan.encoder).anchors()
    # The LLM keyword selector the job builds maps the model's own words to K by embedding (no call is made here).
    llm = LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1",
                    llm_steps="keywords").resolved()
    selector = insights.topic_plan(params, None, _keyword_set(), llm, context, DIMENSION).selector
    selector.mapper.map([["kneading dough", "pytest fixtures"]], 3)
    # The keyword-set builder's refiner (beam_jobs/build_keywords.py) with the same flags' encoder.
    factory.make_keyword_set_refiner(params.embedding.encoder, None).refine(["python", "pythons", "bread"], 2)

    used = {triple for triple, _ in recorded}
    assert used == {(RUN_ENCODER.model, RUN_ENCODER.backend, RUN_ENCODER.device)}, \
        {triple: sorted(set().union(*(c for t, c in recorded if t == triple))) for triple in used}
    assert set().union(*(consumers for _, consumers in recorded)) == set(CONSUMERS.values())


def test_the_pca_basis_is_refused_without_the_runs_encoder():
    """DPKMeans embeds the pca basis's keywords only with the encoder it is given: no default model stands in."""
    from dp_ops.dp_kmeans import DPKMeansParams
    from transforms.dp_kmeans import DPKMeans

    params = DPKMeansParams(num_clusters=2, epsilon=1.0, delta=1e-6, input_dim=8, basis="pca")
    with pytest.raises(ValueError, match="needs the run's encoder"):
        DPKMeans(params, None)
    assert DPKMeans(params, None, encoder=RUN_ENCODER).encoder == RUN_ENCODER
    DPKMeans(dataclasses.replace(params, basis="random"), None)  # a random basis embeds nothing
