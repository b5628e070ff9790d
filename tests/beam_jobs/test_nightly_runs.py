"""Nightly runs: dated input and output folders, the privacy ledger, the report index, the release
gate and exit codes, locally and against gs:// paths on a local GCS emulator."""

import glob
import json
import os

import pytest

from backends.keyword_set import keyword_set_document, load_keyword_set, write_keyword_set
from beam_jobs.insights import run
from beam_jobs.job_runtime import EXIT_BUDGET_REFUSED, EXIT_RELEASE_GATE_FAILED
from core.spend import MechanismSpend
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA
from dp_ops.dp_events import composed_epsilon, event_from_json
from synthetic.sample import write_sample
from tests.support.gcs_emulator import local_gcs

pytestmark = pytest.mark.e2e

SMALL = ["--num_clusters", "6", "--min_cluster_size", "5", "--seed", "2"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    for day, seed in (("2026-11-01", 1), ("2026-11-02", 2), ("2026-11-03", 3), ("2026-11-04", 4)):
        os.makedirs(root / f"dt={day}")
        write_sample(str(root / f"dt={day}" / "part-0.jsonl"), 300, 100, seed=seed)
    return root


def _nightly(logs, output, ledger, date, *extra):
    return run(["--input", str(logs / "dt={date}" / "*.jsonl"), "--output", output, "--date", date,
                "--privacy_ledger", ledger, *SMALL, *extra])


def test_planned_nights_fit_the_window_and_continue_their_topics(logs, tmp_path):
    """With a window cap and no --epsilon every night is planned to fit (3 nights of a 3-day window
    compose to the cap of 12: ~6.41 each, where three default nights of 7 would compose to ~13.24);
    night 2 warm-starts from night 1's released centres and continues its lineages; an explicit
    --epsilon that would bring a window over the cap is refused before any data is read."""
    output, ledger = str(tmp_path / "out"), str(tmp_path / "ledger.json")
    cap = ["--max_epsilon_per_window", "12", "--window_days", "3"]
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        assert _nightly(logs, output, ledger, day, *cap) == 0
    assert _nightly(logs, output, ledger, "2026-11-04", *cap, "--epsilon", "7") == EXIT_BUDGET_REFUSED
    assert not os.path.exists(os.path.join(output, "dt=2026-11-04"))  # refused before any output
    entries = json.load(open(ledger))["entries"]
    assert [(e["date"], e["status"]) for e in entries] == [
        ("2026-11-01", "committed"), ("2026-11-02", "committed"), ("2026-11-03", "committed")]
    # The window recomputed from the ledger's events alone, with a fresh accountant, at the window delta.
    events = [event_from_json(event) for e in entries for event in e["events"]]
    assert 11.9 < composed_epsilon(events, DEFAULT_WINDOW_DELTA) <= 12.0
    index = json.load(open(os.path.join(output, "index.json")))["runs"]
    reports = [json.load(open(os.path.join(output, r["path"], "release", "report.json"))) for r in index]
    plan = reports[0]["privacy"]["plan"]
    assert (plan["nights_per_window"], plan["window_days"], plan["cadence_days"], plan["window_delta"]) == (
        3, 3, 1, DEFAULT_WINDOW_DELTA)
    assert all(r["privacy"]["epsilon"] == pytest.approx(plan["per_night_epsilon"], abs=1e-6) for r in reports)
    assert [r["config"]["warm_start"] for r in reports] == [False, True, True]
    # Every topic has a lineage: night 1's all start there; continuity itself: tests/publishing/test_lineage.py.
    assert all(t["lineage"].startswith("2026-11-01#") for t in reports[0]["topics"])
    assert all(len({t["lineage"] for t in r["topics"]}) == len(r["topics"]) for r in reports)
    assert all(set(r["centres"]["by_topic"]) == {str(t["id"]) for t in r["topics"]} for r in reports)


def test_a_dp_keyword_set_built_without_the_ledger_is_charged_once_and_counts_against_the_cap(logs, tmp_path):
    output, ledger = str(tmp_path / "out"), str(tmp_path / "ledger.json")
    keywords = str(tmp_path / "kw.json")
    spend = MechanismSpend(stage="keyword_set", mechanism="PipelineDP partition selection per term", epsilon=0.5,
                           delta=1e-7, sensitivity=5.0, noise={"kind": "partition_selection"})
    write_keyword_set(keywords, keyword_set_document(list(load_keyword_set(None).keywords), "llm", {}, {}, [spend],
                                                     ledger_run_id="keyword-set-built-elsewhere",
                                                     ledger_date="2026-10-30"))
    with_set = ["--keyword_set", keywords, "--window_days", "7", "--epsilon", "7"]
    assert _nightly(logs, output, ledger, "2026-11-01", *with_set, "--max_epsilon_per_window", "10.2") == 0
    # The set's (0.5, 1e-7) and two nights of 7 compose to ~10.40 > 10.2 at the window delta 1e-5:
    # refused because of the set (two nights alone, ~10.07, would fit).
    assert _nightly(logs, output, ledger, "2026-11-02", *with_set, "--max_epsilon_per_window", "10.2") == (
        EXIT_BUDGET_REFUSED)
    # Without the cap the ledger now holds as its policy, a night is refused too (docs/production.md).
    assert _nightly(logs, output, ledger, "2026-11-03", *with_set) == EXIT_BUDGET_REFUSED
    entries = json.load(open(ledger))["entries"]
    assert [(e["run_id"] == "keyword-set-built-elsewhere", e["date"]) for e in entries] == [
        (True, "2026-10-30"), (False, "2026-11-01")]
    assert entries[0]["epsilon"] == 0.5 and all(6.99 < e["epsilon"] <= 7.0 for e in entries[1:])


def test_rerunning_a_date_is_refused_or_recorded_as_a_second_spend(logs, tmp_path):
    output, ledger = str(tmp_path / "out"), str(tmp_path / "ledger.json")
    assert _nightly(logs, output, ledger, "2026-11-01") == 0
    assert _nightly(logs, output, ledger, "2026-11-01") == EXIT_BUDGET_REFUSED
    assert _nightly(logs, output, ledger, "2026-11-01", "--allow_rerun") == 0
    entries = json.load(open(ledger))["entries"]
    assert [e["rerun"] for e in entries] == [False, True]
    assert len(glob.glob(os.path.join(output, "dt=2026-11-01", "run=*", "release", "report.json"))) == 2


def test_release_gate_rejects_a_release_carrying_a_canary(logs, tmp_path):
    output, ledger = str(tmp_path / "out"), str(tmp_path / "ledger.json")
    canaries = tmp_path / "canaries.txt"
    canaries.write_text("USE-Multilingual-v3\n")  # the model name is in the report's config
    code = _nightly(logs, output, ledger, "2026-11-01", "--canary_file", str(canaries))
    assert code == EXIT_RELEASE_GATE_FAILED
    (run_dir,) = glob.glob(os.path.join(output, "dt=2026-11-01", "run=*"))
    assert os.path.exists(os.path.join(run_dir, "private", "release.rejected", "report.json"))
    assert not glob.glob(os.path.join(run_dir, "release.*"))  # nothing unreviewed beside release/
    assert not glob.glob(os.path.join(run_dir, "release", "*"))
    gate = json.load(open(os.path.join(run_dir, "private", "release_gate.json")))
    assert gate["status"] == "rejected" and gate["findings"][0]["kind"] == "canary"
    assert json.load(open(ledger))["entries"][0]["status"] == "rejected"


def test_whole_job_on_gcs_paths(logs, tmp_path, monkeypatch):
    with local_gcs(monkeypatch, "urania") as bucket:
        from google.cloud import storage
        client = storage.Client.create_anonymous_client()
        client.bucket(bucket).blob("logs/dt=2026-11-02/part-0.jsonl").upload_from_filename(
            str(logs / "dt=2026-11-02" / "part-0.jsonl"))
        code = run(["--input", f"gs://{bucket}/logs/dt={{date}}/*.jsonl", "--output", f"gs://{bucket}/insights",
                    "--date", "2026-11-02", "--privacy_ledger", f"gs://{bucket}/ledger.json",
                    "--max_epsilon_per_window", "10", *SMALL])
        assert code == 0
        names = [blob.name for blob in client.list_blobs(bucket)]
        (report_name,) = [n for n in names if n.endswith("release/report.json")]
        report = json.loads(client.bucket(bucket).blob(report_name).download_as_bytes())
        assert report["topics"] and report["config"]["date"] == "2026-11-02"
        assert any(n.endswith("private/run_stats.json") for n in names)
        assert any("/private/assignments/" in n for n in names)
        ledger = json.loads(client.bucket(bucket).blob("ledger.json").download_as_bytes())
        assert [e["status"] for e in ledger["entries"]] == ["committed"]
        assert "insights/index.json" in names
        # The gate record is written aside and renamed on GCS too: in place, nothing left over.
        gate_name = report_name.replace("release/report.json", "private/release_gate.json")
        assert json.loads(client.bucket(bucket).blob(gate_name).download_as_bytes())["status"] == "committed"
        assert not any(n.endswith(".tmp") for n in names)
