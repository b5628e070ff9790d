"""The evaluation's pipelines: SIMPLE-CLIO, the in-process URANIA runs (against the job's own
mechanism and the Beam job itself), and smoke runs of each CLI."""

import json
import math
import os
import subprocess
import sys

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from core.records import Conversation, ConversationBlock, Message
from dp_ops.dp_kmeans import DPKMeansParams, fit_dp_kmeans
from eval.data import bound_contributions
from eval.utility.simple_clio import ClusterSummariser, SimpleClioParams, redact_pii, run_simple_clio, write_report
from synthetic.sample import write_sample
from transforms.bound_contributions import BoundUserContributions
from transforms.dp_kmeans import DPKMeans
from transforms.engine import LocalEngine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _blobs(rng, per_cluster, directions):
    vectors = np.vstack([d + 0.05 * rng.standard_normal((n, len(d))) for d, n in zip(directions, per_cluster)])
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_in_process_kmeans_releases_what_fit_dp_kmeans_releases():
    rng = np.random.default_rng(0)
    vectors = _blobs(rng, [60, 60, 60], np.eye(3, 16) * 1.0)
    weights = np.full(len(vectors), 0.5)
    params = DPKMeansParams(num_clusters=3, epsilon=4.0, delta=1e-6, input_dim=16, projection_dim=8, seed=3)
    reference, calibration = fit_dp_kmeans(vectors, weights, params, noise_seed=9)
    blocks = [ConversationBlock([f"c{i}" for i in range(n, n + 90)], ["u"] * 90, weights[n:n + 90], [""] * 90,
                                vectors[n:n + 90]) for n in (0, 90)]
    stage = DPKMeans(params, None, noise_seed=9)
    ours = LocalEngine().apply("DP k-means", stage, blocks)
    np.testing.assert_allclose(ours.centres, reference, atol=1e-6)
    assert stage.calibration.sigma == pytest.approx(calibration.sigma)
    assert stage.spend.epsilon == pytest.approx(calibration.epsilon_spent)
    assert [len(b) for b in ours.blocks] == [90, 90] and all(b.points is None for b in ours.blocks)
    exact_stage = DPKMeans(params, None, private=False)
    exact = LocalEngine().apply("k-means", exact_stage, blocks)
    assert exact_stage.spend is None and exact.active_dim == params.dim
    assert len({tuple(np.round(c, 3)) for c in exact.centres}) == 3


def test_bounding_matches_the_beam_transform():
    users = [f"u{i % 7}" if i % 3 else f"heavy{i % 2}" for i in range(120)]
    ids = [f"c{i}" for i in range(120)]
    kept, weights = bound_contributions(users, ids, limit=4, seed=11)
    conversations = [Conversation(c, u, None, (Message("user", "hi"),)) for c, u in zip(ids, users)]
    with beam.Pipeline("FnApiRunner") as pipeline:
        rows = (pipeline | beam.Create(conversations) | BoundUserContributions(4, 11)
                | beam.Map(lambda w: (w.conversation.conversation_id, w.weight)))
        beam_rows = rows | beam.combiners.ToList()

        def check(found):
            assert dict(found[0]) == {ids[i]: w for i, w in zip(kept, weights)}
        assert_that(beam_rows, check)


class _EchoSummariser(ClusterSummariser):
    def summarise(self, members, contrastive):
        return {"name": "Echo", "description": " | ".join(members), "keywords": ["echo"]}


def test_simple_clio_report_defences_and_non_private_marking(tmp_path):
    rng = np.random.default_rng(1)
    vectors = _blobs(rng, [40, 40, 6], np.eye(3, 8))
    ids = [f"c{i}" for i in range(86)]
    users = [f"u{i}" for i in range(80)] + ["lonely"] * 6  # the small cluster has one user
    facets = [f"question {i} mail me at jo.doe.{i:05d}@example.com" for i in range(86)]
    report = run_simple_clio(ids, users, facets, vectors, SimpleClioParams(num_clusters=3, seed=0), _EchoSummariser())
    assert report["privacy"]["differentially_private"] is False
    assert sorted(t["size"] for t in report["topics"]) == [6, 40, 40]
    assert all(t["description"].count("|") == 9 for t in report["topics"] if t["size"] == 40)  # 10 members
    assert "@example.com" in report["topics"][0]["description"]
    defended = run_simple_clio(ids, users, facets, vectors, SimpleClioParams(num_clusters=3, seed=0, k_min=2, redact=True),
                               _EchoSummariser())
    assert sorted(t["size"] for t in defended["topics"]) == [40, 40]
    assert all("@" not in t["description"] and "[EMAIL]" in t["description"] for t in defended["topics"])
    run_dir = write_report(report, str(tmp_path))
    assert run_dir.endswith("non_private_baseline")
    with open(os.path.join(run_dir, "release", "report.json")) as handle:
        assert "_private" not in json.load(handle)


def test_namer_summariser_uses_the_jobs_namer_on_distinctive_words():
    from backends.offline import KeywordClusterNamer
    from eval.utility.simple_clio import NamerSummariser
    summary = NamerSummariser(KeywordClusterNamer(), keywords=2).summarise(
        ["sourdough starter feeding", "sourdough oven spring"], ["tax return filing", "oven cleaning"])
    assert summary["keywords"][0] == "sourdough" and summary["name"].startswith("Sourdough")
    assert "oven" not in summary["keywords"][:1]


def test_redact_pii():
    assert redact_pii("call +1 415-555-0123 or mail a.b.00001@example.com, 12 Juniper Lane") == \
        "call [PHONE] or mail [EMAIL], [STREET_ADDRESS]"


def _run(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=REPO, HF_HUB_OFFLINE="1")
    completed = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=timeout)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


@pytest.mark.e2e
def test_in_process_urania_assigns_like_the_beam_job(small_run):
    """The same topic stages on both engines are tests/transforms/test_engines.py's; this compares what is put together
    differently before them: the evaluation's reading, facets and embedding (eval.data) with the job's."""
    from eval.data import embed_cached, load_dataset
    from eval.urania_inprocess import UraniaConfig, run_urania
    from tests.support.small_run import MIN_CLUSTER_SIZE, NOISE_SEED, NUM_CLUSTERS, SEED
    out = small_run.output
    beam_assignments = {}
    for name in os.listdir(os.path.join(out, "private", "assignments")):
        with open(os.path.join(out, "private", "assignments", name)) as handle:
            beam_assignments.update({r["conversation_id"]: r["cluster_id"] for r in map(json.loads, handle)})
    with open(os.path.join(out, "release", "report.json")) as handle:
        beam_report = json.load(handle)
    dataset = load_dataset(small_run.data)
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embed_cached(dataset.facets, cache_dir=None),
                        UraniaConfig(num_clusters=NUM_CLUSTERS, min_cluster_size=MIN_CLUSTER_SIZE, themes=True),
                        seed=SEED, noise_seed=NOISE_SEED)
    assert report["_private"]["assignments"] == beam_assignments
    # The same DP-derived dimension, in the report's config and in run_stats.
    with open(os.path.join(out, "private", "run_stats.json")) as handle:
        stats = json.load(handle)
    assert report["config"]["clustering_dimension"] == beam_report["config"]["clustering_dimension"]
    assert stats["clustering_dimension"] == beam_report["config"]["clustering_dimension"]
    assert report["privacy"]["epsilon"] == pytest.approx(beam_report["privacy"]["epsilon"])
    assert [m["stage"] for m in report["privacy"]["mechanisms"]] == [m["stage"] for m in beam_report["privacy"]["mechanisms"]]
    for ours, theirs in zip(report["privacy"]["mechanisms"], beam_report["privacy"]["mechanisms"]):
        assert ours["noise"] == pytest.approx(theirs["noise"]) if ours["stage"] != "clustering" else True
    # The weighted keyword votes' noise is seeded too (--noise_seed), so a topic both released has the
    # same keywords from the same source (the sizes' PipelineDP noise is not: the released sets may differ).
    labels = {t["id"]: (t["keywords"], t["label_source"], t["label_evidence"]) for t in report["topics"]}
    beam_labels = {t["id"]: (t["keywords"], t["label_source"], t["label_evidence"]) for t in beam_report["topics"]}
    common = set(labels) & set(beam_labels)
    assert common and {i: labels[i] for i in common} == {i: beam_labels[i] for i in common}
    assert report["privacy"]["min_users_to_label_a_topic"] == beam_report["privacy"]["min_users_to_label_a_topic"]


@pytest.mark.e2e
def test_canary_cli_shows_the_extractive_baseline_leaking(tmp_path):
    out = _run("-m", "eval.audit.canaries", "--pipeline", "simple_clio", "--data", str(tmp_path / "canaries"),
               "--conversations", "300", "--users", "120", "--num_clusters", "10",
               "--json", str(tmp_path / "table.json"))
    assert "clusters leaking a canary" in out
    with open(tmp_path / "table.json") as handle:
        table = json.load(handle)["table"]
    assert table["canaries_leaked"] > 0 and table["cluster_leak_rate"] > 0.5
    defended = _run("-m", "eval.audit.canaries", "--pipeline", "simple_clio", "--data", str(tmp_path / "canaries"),
                    "--num_clusters", "10", "--k_min", "5", "--redact", "--json", str(tmp_path / "defended.json"))
    assert "k_min/redaction" in defended
    with open(tmp_path / "defended.json") as handle:
        after = json.load(handle)["table"]
    for kind in ("email", "phone", "street_address"):  # regex redaction removes these kinds, not phrases
        assert after["by_kind"][kind]["leaked"] == 0


@pytest.mark.e2e
def test_sweep_and_membership_inference_clis(tmp_path, capsys):
    # Their main()s in this process (not `python -m` in a subprocess): the four runs share one import of
    # the job and one load of the embedding model, which were most of this test's time.
    from eval.audit import membership_inference
    from eval.utility import sweep

    def run(main, *argv):
        main(list(argv))
        return capsys.readouterr().out

    path = str(tmp_path / "conversations.jsonl")
    write_sample(path, 400, 150, seed=8)
    out = run(sweep.main, "--data", path, "--num_clusters", "6", "--min_cluster_size", "10",
              "--output", str(tmp_path / "sweep"))
    assert "| inf |" in out
    for ext in ("md", "csv", "png"):
        assert os.path.getsize(tmp_path / "sweep" / f"sweep_conversations.{ext}") > 0
    with open(tmp_path / "sweep" / "sweep_conversations.csv") as handle:
        rows = handle.read().splitlines()
    assert len(rows) == 6 and rows[-1].startswith("inf,inf,")
    out = run(membership_inference.main, "--data", path, "--runs", "8", "--n", "40", "--num_clusters", "3",
              "--output", str(tmp_path / "mi"))
    assert "| urania |" in out and "| simple_clio |" in out
    with open(tmp_path / "mi" / "conversations.json") as handle:
        result = json.load(handle)
    assert sum(result["membership"]) == 4 and len(result["scores"]["urania"]) == 8
    assert all(math.isfinite(s) for s in result["scores"]["simple_clio"])
    assert os.path.getsize(tmp_path / "mi" / "conversations_roc.png") > 0
    # --set reaches the config; --pool reads run sets back as one.
    run(membership_inference.main, "--data", path, "--runs", "4", "--n", "40", "--num_clusters", "3",
        "--seed", "1", "--set", "label_fallback=none", "--output", str(tmp_path / "mi1"))
    with open(tmp_path / "mi1" / "conversations.json") as handle:
        second = json.load(handle)
    assert second["args"]["set"] == ["label_fallback=none"]
    out = run(membership_inference.main, "--pool", str(tmp_path / "mi" / "conversations.json"),
              str(tmp_path / "mi1" / "conversations.json"))
    assert "pooled 2 run sets, 12 runs" in out and "| urania |" in out


def test_in_process_urania_with_nothing_kept_releases_nothing_and_still_accounts():
    from eval.urania_inprocess import UraniaConfig, run_urania
    rng = np.random.default_rng(2)
    from backends import embedding
    dimension = embedding.embedding_dimension(embedding.DEFAULT_EMBEDDING_MODEL)  # the run's encoder's
    vectors = _blobs(rng, [20, 20], np.eye(2, dimension))
    ids, users = [f"c{i}" for i in range(40)], [f"u{i}" for i in range(40)]
    report = run_urania(ids, users, ["x"] * 40, vectors, UraniaConfig(num_clusters=4, min_cluster_size=1e6),
                        seed=1, noise_seed=2)
    assert report["topics"] == []
    # Every default release is accounted, the themes' and facets' included, with no topic released.
    assert sorted({m["stage"] for m in report["privacy"]["mechanisms"]}) == sorted(
        ["user_count", "clustering", "cluster_sizes", "keyword_histograms", "themes", "facets", "facet_topics"])
    # Never over; under by at most what PyDP's Gaussian sigma grid rounds the histogram noise up.
    assert 6.99 < report["privacy"]["epsilon"] <= 7.0
