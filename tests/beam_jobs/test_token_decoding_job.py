"""--token_decoding_steps on the whole job (DirectRunner): the stage joins the joint calibration, its spend
is in the report and its events in the ledger, and every released topic gets a dp_token_decoded
description. The mechanism itself: tests/dp_ops/test_token_decoding.py."""

import glob
import json
import os

import pytest

from beam_jobs.insights import run
from core.dp_stages import CLUSTER_SIZES, CLUSTERING, FACET_TOPICS, FACETS, KEYWORD_HISTOGRAMS, THEMES, USER_COUNT
from dp_ops.token_decoding import STAGE
from synthetic.sample import write_sample

pytestmark = pytest.mark.real_llm

EPSILON = 6.0


def test_the_job_decodes_every_topic_within_the_runs_budget_and_ledgers_the_stage(tmp_path):
    logs = tmp_path / "logs"
    os.makedirs(logs)
    write_sample(str(logs / "part-0.jsonl"), 300, 100, seed=1)
    output, ledger = str(tmp_path / "out"), str(tmp_path / "ledger.json")
    # T = 2 and n = 4 keep the model's share of the wall time to its load (the mechanism is the same at any T).
    assert run(["--input", str(logs / "*.jsonl"), "--output", output, "--date", "2026-11-01",
                "--privacy_ledger", ledger, "--num_clusters", "4", "--min_cluster_size", "5", "--seed", "2",
                "--epsilon", str(EPSILON), "--token_decoding_steps", "2", "--token_decoding_sample", "4"]) == 0
    [path] = glob.glob(os.path.join(output, "dt=2026-11-01", "run=*", "release", "report.json"))
    report = json.load(open(path))
    privacy = report["privacy"]
    # One budget: the joint calibration shares --epsilon with the decoding stage, it does not add to it.
    # (The calibration scales the noise to 1e-4: with the default releases' eight stages the total lands a
    # few 1e-4 under --epsilon, never over.)
    assert EPSILON * (1 - 1e-3) <= privacy["epsilon"] <= EPSILON
    stages = {m["stage"]: m for m in privacy["mechanisms"]}
    assert set(stages) == {USER_COUNT, CLUSTERING, CLUSTER_SIZES, KEYWORD_HISTOGRAMS, THEMES, FACETS, FACET_TOPICS,
                           STAGE}
    decoding = stages[STAGE]
    assert 0 < decoding["epsilon"] < EPSILON
    assert decoding["sensitivity"] == pytest.approx(2 * 40.0 / 4)
    assert decoding["event"]["count"] == 2 and decoding["releases"].startswith("each kept topic's token-decoded")
    assert report["config"]["token_decoding"] == {"steps": 2, "sample_size": 4, "clip_norm": 40.0}
    assert report["topics"]
    for topic in report["topics"]:
        assert topic["token_decoded"]["evidence"] == "dp_token_decoded"
        assert isinstance(topic["token_decoded"]["description"], str)
    assert "may be noise" in report["token_decoding_note"]
    # The ledger holds the run's events, the decoding stage's among them, as the report states them.
    [entry] = json.load(open(ledger))["entries"]
    assert entry["status"] == "committed"
    assert decoding["event"] in entry["events"]
    assert [m["event"] for m in privacy["mechanisms"]] == entry["events"]
