"""FinalizeRun: the last step of a run, inside the pipeline (a Flex Template launcher does not wait
for the job, so nothing after pipeline.run() can be relied on in production).

The report is written to private/release.pending/ (under --private_output when given: nothing
unreviewed sits beside release/). This step scans it with the release gate; if clean it
moves it to release/, marks the run committed in the privacy ledger, lists it in the report index
and rebuilds the topic timeline (transforms/write_timeline.py);
otherwise it moves it to private/release.rejected/, marks the run rejected and fails the job. It may run
more than once for a run (see `finalize`). Its timing goes to private/release_gate.json, never to
the public index.
"""

from __future__ import annotations

import json
import logging

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from core import json_store
from core.dates import utc_timestamp
from core.run_context import RunContext
from dp_ops.ledger_updates import set_ledger_status
from publishing.release_gate import scan
from transforms.write_timeline import write_timeline


class ReleaseGateFailed(RuntimeError):
    pass


def _read_folder(folder: str) -> dict[str, bytes]:
    """Every file at any depth under `folder` ("**": "*" would skip subfolders, leaving their files
    unscanned), by path. A missing folder has none."""
    contents = {}
    for metadata in FileSystems.match([FileSystems.join(folder, "**")])[0].metadata_list:
        with FileSystems.open(metadata.path) as handle:
            contents[metadata.path] = handle.read()
    return contents


def _move_files(contents: dict[str, bytes], source_dir: str, target_dir: str, last: str) -> None:
    """Moves every file to the same relative path under target_dir, one at a time (written, then its
    source deleted), `last` after all others: a crash leaves every file in one folder or the other
    (or in both, same content), so a retry that moves what is still in source_dir completes the move;
    and while report.json is missing from release/, readers know the release is incomplete."""
    prefix = source_dir.rstrip("/") + "/"
    for path in sorted(contents, key=lambda p: (p == last, p)):
        relative = path[len(prefix):] if path.startswith(prefix) else path.rsplit("/", 1)[-1]
        with FileSystems.create(FileSystems.join(target_dir, relative)) as sink:
            sink.write(contents[path])
        FileSystems.delete([path])


def _write_json_atomically(path: str, document: dict) -> None:
    """Written aside, then renamed over `path` (an atomic replace locally; on GCS an object is never
    partly visible): a crash never leaves a torn release-gate record for a retry to misread."""
    temporary = path + ".tmp"
    with FileSystems.create(temporary) as handle:
        handle.write(json.dumps(document, indent=2).encode())
    FileSystems.rename([temporary], [path])


def _recorded_gate(context: RunContext) -> dict | None:
    """The release-gate decision an earlier attempt of this run recorded, or None. A record from
    another run is ignored: undated runs share OUTPUT/private/."""
    path = context.private("release_gate.json")
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as handle:
        raw = handle.read()
    try:
        gate = json.loads(raw)
    except ValueError as error:
        # Not a crash (writes are atomic): scanning what is left pending could pass a release whose
        # offending file already moved, so stop and let a person look.
        raise RuntimeError(f"run {context.run_id}: {path} is not valid JSON ({error}); not finalizing "
                           f"without the release gate's recorded decision") from error
    return gate if gate.get("run_id") == context.run_id else None


def _index_entry(context: RunContext, status: str, report: dict | None) -> dict:
    """The run's public index entry: its identity and, if published, DP outputs and spend. No time
    of day: the run id holds the start time, and a finish time beside it would publish the run's
    duration, which grows with the data (timings are in private/release_gate.json)."""
    relative = context.run_dir[len(context.output_root):].strip("/")
    entry = {"run_id": context.run_id, "date": context.date, "path": relative, "status": status}
    if report is not None:
        entry.update(topics=len(report["topics"]), epsilon=report["privacy"]["epsilon"],
                     delta=report["privacy"]["delta"])
    return entry


def add_to_index(context: RunContext, status: str, report: dict | None) -> None:
    """Adds or replaces (a retry) the run's entry in OUTPUT/index.json."""
    entry = _index_entry(context, status, report)

    def mutate(doc):
        runs = [run for run in (doc or {}).get("runs", []) if run["run_id"] != context.run_id]
        return {"runs": sorted(runs + [entry], key=lambda run: (run["date"] or "", run["run_id"]))}

    json_store.update_json(context.index, mutate)


def finalize(report_path: str, context: RunContext, canaries: tuple[str, ...], ledger_path: str | None) -> str:
    """Gates, publishes or rejects, and records the run. Safe to run again (a runner retries bundles,
    and a rejection raises, which makes it retry): the gate's decision is recorded in private/ before
    anything moves and an attempt after the first follows it, moving what is still pending; so a
    release is published at most once and a rejected one never, even when the file that failed the
    gate has already left private/release.pending/. The ledger status and index entry are set, not added."""
    pending_dir = report_path.rsplit("/", 1)[0]
    pending = _read_folder(pending_dir)  # read once: scanned, then moved
    gate = _recorded_gate(context)
    if gate is None:
        if report_path not in pending:
            raise RuntimeError(f"{report_path} does not exist and no earlier attempt of run {context.run_id} "
                               f"recorded a release-gate decision: nothing to finalize")
        findings = [finding for path, content in pending.items() for finding in scan(path, content, canaries)]
        # Findings hold the offending text itself, so they go to private/, never next to the release.
        gate = {"run_id": context.run_id, "status": "rejected" if findings else "committed",
                "findings": [f.__dict__ for f in findings]}
        _write_json_atomically(context.private("release_gate.json"), gate)
    status, rejected = gate["status"], gate["status"] == "rejected"
    target_dir = context.rejected_dir if rejected else context.path("release")
    _move_files(pending, pending_dir, target_dir, last=report_path)
    if ledger_path:
        set_ledger_status(ledger_path, context.run_id, status)
    if context.date:
        report = None if rejected else _read_report(FileSystems.join(target_dir, "report.json"), context)
        add_to_index(context, status, report)
        if not rejected:
            try:
                write_timeline(context.output_root)
            except Exception as error:  # derived and rebuildable (beam_jobs.timeline): never fail a published run
                logging.getLogger("urania.timeline").warning(
                    "timeline not rebuilt", extra={"event": "timeline_failed", "run_id": context.run_id,
                                                   "error": f"{type(error).__name__}: {error}"})
    if "finished_at" not in gate:
        # The run's timing stays private (see _index_entry); a retry keeps the first completion's.
        gate["finished_at"] = utc_timestamp()
        _write_json_atomically(context.private("release_gate.json"), gate)
    if rejected:
        kinds = sorted({f["kind"] for f in gate["findings"]})
        raise ReleaseGateFailed(f"release gate found {len(gate['findings'])} PII-like or canary string(s) "
                                f"({', '.join(kinds)}); the release was moved to {context.rejected_dir}/ and not published")
    return context.path("release", "report.json")


def _read_report(path: str, context: RunContext) -> dict:
    try:
        with FileSystems.open(path) as handle:
            return json.loads(handle.read())
    except OSError as error:
        raise RuntimeError(f"run {context.run_id}: the release gate passed it but {path} cannot be read: {error}") from error


class FinalizeRun(beam.PTransform):
    def __init__(self, context: RunContext, canaries: tuple[str, ...], ledger_path: str | None):
        super().__init__()
        self._context = context
        self._canaries = canaries
        self._ledger_path = ledger_path

    def expand(self, report_paths):
        return report_paths | "gate, publish, commit ledger" >> beam.Map(
            finalize, self._context, self._canaries, self._ledger_path)
