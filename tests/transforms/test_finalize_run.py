"""FinalizeRun's `finalize` under a runner's retries: run twice, or after a crash in the middle of
moving the release, it publishes once, keeps a rejected release rejected, and the public index
holds no timing."""

import datetime as dt
import json
import os

import pytest
from apache_beam.io.filesystems import FileSystems

from core.run_context import make_run_context
from dp_ops.budget_ledger import Ledger, LedgerEntry
from transforms import finalize_run
from transforms.finalize_run import ReleaseGateFailed, finalize

NOW = dt.datetime(2026, 11, 22, 3, 4, 5, tzinfo=dt.timezone.utc)
CANARY = "purple giraffe umbrella"
REPORT = {"topics": [{"id": 1, "name": "Cooking", "keywords": ["cooking"], "size": 40}],
          "privacy": {"epsilon": 7.0, "delta": 1e-6}}


def _files(folder):
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = open(path, "rb").read()
    return found


def _pending_run(tmp_path, html="<p>Cooking and baking</p>"):
    """A dated run with report.json, report.html and a file in a subfolder waiting in private/release.pending/,
    and its spend reserved in a ledger."""
    context = make_run_context(str(tmp_path / "in.jsonl"), str(tmp_path / "out"), "2026-11-21", now=NOW)
    pending_dir = os.path.dirname(context.report_pending)
    os.makedirs(os.path.join(pending_dir, "html"))
    with open(context.report_pending, "w") as handle:
        json.dump(REPORT, handle)
    with open(os.path.join(pending_dir, "report.html"), "w") as handle:
        handle.write(html)
    with open(os.path.join(pending_dir, "html", "index.html"), "w") as handle:
        handle.write("<p>Topics</p>")
    ledger = str(tmp_path / "ledger.json")
    entry = LedgerEntry(run_id=context.run_id, date="2026-11-21", epsilon=7.0, delta=1e-6, status="reserved",
                        recorded_at=NOW.isoformat(), output=context.run_dir)
    with open(ledger, "w") as handle:
        json.dump(Ledger().with_entry(entry).to_json(), handle)
    return context, ledger, _files(pending_dir)


def _ledger_statuses(ledger):
    return [(e.run_id, e.status) for e in Ledger.from_json(json.load(open(ledger))).entries]


def _index(context):
    return json.load(open(context.index))["runs"]


class _Crash(Exception):
    pass


def _crash_after(monkeypatch, operation, count):
    """Makes the move die after `count` files were created under the run's release folders
    (operation "create") or deleted from release.pending/ ("delete"), as a worker lost in the
    middle of the move would."""
    real_create, real_delete, done = FileSystems.create, FileSystems.delete, []

    def create(path, *args, **kwargs):
        if operation == "create" and ("/release/" in path or "/release.rejected/" in path):
            if len(done) == count:
                raise _Crash(path)
            done.append(path)
        return real_create(path, *args, **kwargs)

    def delete(paths):
        for path in paths:
            if operation == "delete" and "/release.pending/" in path:
                if len(done) == count:
                    raise _Crash(path)
                done.append(path)
            real_delete([path])

    monkeypatch.setattr(finalize_run.FileSystems, "create", create)
    monkeypatch.setattr(finalize_run.FileSystems, "delete", delete)


CRASHES = [("create", 0), ("create", 1), ("create", 2), ("delete", 1), ("delete", 2)]


def test_finalize_twice_publishes_once_and_the_retry_succeeds(tmp_path):
    context, ledger, pending = _pending_run(tmp_path)
    published = context.path("release", "report.json")
    assert finalize(context.report_pending, context, (CANARY,), ledger) == published
    first_index = _index(context)
    assert finalize(context.report_pending, context, (CANARY,), ledger) == published
    assert _files(context.path("release")) == pending
    assert not _files(os.path.dirname(context.report_pending))
    assert _ledger_statuses(ledger) == [(context.run_id, "committed")]
    assert _index(context) == first_index and [r["status"] for r in first_index] == ["committed"]


@pytest.mark.parametrize("operation,count", CRASHES)
def test_a_retry_after_a_crash_mid_move_publishes_every_file(tmp_path, monkeypatch, operation, count):
    context, ledger, pending = _pending_run(tmp_path)
    with monkeypatch.context() as patch:
        _crash_after(patch, operation, count)
        with pytest.raises(_Crash):
            finalize(context.report_pending, context, (CANARY,), ledger)
    # Half moved; report.json goes last, so a reader never sees a report without its other files.
    assert _files(os.path.dirname(context.report_pending))
    if os.path.exists(context.path("release", "report.json")):
        assert _files(context.path("release")) == pending
    assert finalize(context.report_pending, context, (CANARY,), ledger) == context.path("release", "report.json")
    assert _files(context.path("release")) == pending
    assert not _files(os.path.dirname(context.report_pending))
    assert _ledger_statuses(ledger) == [(context.run_id, "committed")]
    [entry] = _index(context)
    assert entry["status"] == "committed" and entry["topics"] == 1


def test_a_rejected_release_stays_rejected_on_retry(tmp_path):
    context, ledger, pending = _pending_run(tmp_path, html=f"<p>{CANARY}</p>")
    for _ in range(2):
        with pytest.raises(ReleaseGateFailed, match="not published"):
            finalize(context.report_pending, context, (CANARY,), ledger)
    assert not os.path.exists(context.path("release"))
    assert _files(context.rejected_dir) == pending
    gate = json.load(open(context.private("release_gate.json")))
    assert gate["status"] == "rejected" and [f["kind"] for f in gate["findings"]] == ["canary"]
    assert _ledger_statuses(ledger) == [(context.run_id, "rejected")]
    assert [r["status"] for r in _index(context)] == ["rejected"]


@pytest.mark.parametrize("operation", ["create", "delete"])
def test_a_retry_after_the_offending_file_was_moved_does_not_publish_the_rest(tmp_path, monkeypatch, operation):
    # The canary is in report.html; once it has left release.pending/, what is left there is clean,
    # so a rescan of it alone would pass it.
    context, ledger, pending = _pending_run(tmp_path, html=f"<p>{CANARY}</p>")
    with monkeypatch.context() as patch:
        _crash_after(patch, operation, 2)
        with pytest.raises(_Crash):
            finalize(context.report_pending, context, (CANARY,), ledger)
    assert "report.html" in _files(context.rejected_dir)
    with pytest.raises(ReleaseGateFailed):
        finalize(context.report_pending, context, (CANARY,), ledger)
    assert not os.path.exists(context.path("release"))
    assert _files(context.rejected_dir) == pending
    assert _ledger_statuses(ledger) == [(context.run_id, "rejected")]


def test_an_earlier_undated_runs_decision_is_not_reused(tmp_path):
    # Undated runs share OUTPUT/private/: a rejected earlier run must not reject (or publish) this one.
    rejected = make_run_context(str(tmp_path / "in.jsonl"), str(tmp_path / "out"), None, now=NOW)
    pending_dir = os.path.dirname(rejected.report_pending)
    os.makedirs(pending_dir)
    with open(rejected.report_pending, "w") as handle:
        json.dump(dict(REPORT, topics=[{"id": 1, "name": CANARY}]), handle)
    with pytest.raises(ReleaseGateFailed):
        finalize(rejected.report_pending, rejected, (CANARY,), None)
    clean = make_run_context(str(tmp_path / "in.jsonl"), str(tmp_path / "out"), None, now=NOW)
    with open(clean.report_pending, "w") as handle:
        json.dump(REPORT, handle)
    assert finalize(clean.report_pending, clean, (CANARY,), None) == clean.path("release", "report.json")
    assert json.load(open(clean.private("release_gate.json")))["run_id"] == clean.run_id


def test_a_corrupt_gate_record_stops_the_retry_instead_of_rescanning(tmp_path):
    context, ledger, pending = _pending_run(tmp_path)
    with open(context.private("release_gate.json"), "w") as handle:  # private/ holds release.pending/
        handle.write('{"run_id": "')
    with pytest.raises(RuntimeError, match="not valid JSON"):
        finalize(context.report_pending, context, (CANARY,), ledger)
    assert _files(os.path.dirname(context.report_pending)) == pending and not os.path.exists(context.path("release"))


def test_nothing_to_finalize_is_a_clear_error(tmp_path):
    context = make_run_context(str(tmp_path / "in.jsonl"), str(tmp_path / "out"), "2026-11-21", now=NOW)
    with pytest.raises(RuntimeError, match="nothing to finalize"):
        finalize(context.report_pending, context, (), None)


def test_the_public_index_holds_no_timing_and_the_private_gate_record_does(tmp_path):
    context, ledger, _ = _pending_run(tmp_path)
    finalize(context.report_pending, context, (), ledger)
    [entry] = _index(context)
    # Only the run's identity and DP outputs or public parameters: a finish time next to the run
    # id's start time would publish the run's duration, which grows with the data.
    assert entry == {"run_id": context.run_id, "date": "2026-11-21", "path": f"dt=2026-11-21/run={context.run_id}",
                     "status": "committed", "topics": 1, "epsilon": 7.0, "delta": 1e-6}
    gate = json.load(open(context.private("release_gate.json")))
    assert gate["run_id"] == context.run_id and gate["status"] == "committed"
    assert dt.datetime.fromisoformat(gate["finished_at"]).tzinfo is not None


@pytest.mark.parametrize("html,published", [("<p>Cooking and baking</p>", True), (f"<p>{CANARY}</p>", False)])
def test_pending_and_rejected_releases_stay_under_the_private_output(tmp_path, html, published):
    # With --private_output in its own bucket, the public output only ever holds release/ (and the
    # index): the release waits for the gate, and a rejected one is kept, under the private folder.
    output, private = tmp_path / "public", tmp_path / "private"
    context = make_run_context(str(tmp_path / "in.jsonl"), str(output), "2026-11-21", now=NOW,
                               private_output=str(private))
    assert context.report_pending.startswith(context.private_dir + os.sep)
    assert context.rejected_dir.startswith(context.private_dir + os.sep)
    os.makedirs(os.path.dirname(context.report_pending))
    with open(context.report_pending, "w") as handle:
        json.dump(REPORT, handle)
    with open(os.path.join(os.path.dirname(context.report_pending), "report.html"), "w") as handle:
        handle.write(html)
    if published:
        finalize(context.report_pending, context, (CANARY,), None)
    else:
        with pytest.raises(ReleaseGateFailed):
            finalize(context.report_pending, context, (CANARY,), None)
    public = {os.path.relpath(os.path.join(root, name), output) for root, _, names in os.walk(output) for name in names
              if not name.endswith(".lock")}  # the index's local update lock
    run = f"dt=2026-11-21/run={context.run_id}"
    assert public == ({"index.json", f"{run}/release/report.json", f"{run}/release/report.html", "timeline.json",
                       "timeline.html", "timeline.csv", "timeline.parquet"} if published else {"index.json"})
    assert _files(context.rejected_dir) == ({} if published else {"report.json": json.dumps(REPORT).encode(),
                                                                   "report.html": html.encode()})
    assert not _files(os.path.dirname(context.report_pending))
