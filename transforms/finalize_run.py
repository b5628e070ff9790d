"""FinalizeRun: the last step of a run, inside the pipeline (a Flex Template launcher does not wait
for the job, so nothing after pipeline.run() can be relied on in production).

The report is written to release.pending/. This step scans it with the release gate; if clean it
moves it to release/, marks the run committed in the privacy ledger and lists it in the report index;
otherwise it moves it to release.rejected/, marks the run rejected and fails the job.
"""

from __future__ import annotations

import datetime as dt
import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beam_jobs import json_store
from beam_jobs.release_gate import scan
from beam_jobs.run_context import RunContext
from dp_ops.budget_ledger import Ledger


class ReleaseGateFailed(RuntimeError):
    pass


def _read_folder(folder: str) -> dict[str, bytes]:
    """Every file at any depth under `folder` ("**": "*" would skip subfolders, leaving their files
    unscanned), by path."""
    contents = {}
    for metadata in FileSystems.match([FileSystems.join(folder, "**")])[0].metadata_list:
        with FileSystems.open(metadata.path) as handle:
            contents[metadata.path] = handle.read()
    return contents


def _move_files(contents: dict[str, bytes], source_dir: str, target_dir: str) -> None:
    """Moves every file to the same relative path under target_dir."""
    prefix = source_dir.rstrip("/") + "/"
    for path, content in contents.items():
        relative = path[len(prefix):] if path.startswith(prefix) else path.rsplit("/", 1)[-1]
        with FileSystems.create(FileSystems.join(target_dir, relative)) as sink:
            sink.write(content)
    FileSystems.delete(list(contents))


def set_ledger_status(ledger_path: str, run_id: str, status: str) -> None:
    json_store.update_json(ledger_path, lambda doc: Ledger.from_json(doc).with_status(run_id, status).to_json())


def _index_entry(context: RunContext, status: str, report: dict | None) -> dict:
    relative = context.run_dir[len(context.output_root):].strip("/")
    entry = {"run_id": context.run_id, "date": context.date, "path": relative, "status": status,
             "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    if report is not None:
        entry.update(topics=len(report["topics"]), epsilon=report["privacy"]["epsilon"],
                     delta=report["privacy"]["delta"])
    return entry


def add_to_index(context: RunContext, status: str, report: dict | None) -> None:
    entry = _index_entry(context, status, report)

    def mutate(doc):
        runs = [run for run in (doc or {}).get("runs", []) if run["run_id"] != context.run_id]
        return {"runs": sorted(runs + [entry], key=lambda run: (run["date"] or "", run["run_id"]))}

    json_store.update_json(context.index, mutate)


def finalize(report_path: str, context: RunContext, canaries: tuple[str, ...], ledger_path: str | None) -> str:
    pending_dir = report_path.rsplit("/", 1)[0]
    pending = _read_folder(pending_dir)  # read once: scanned, then moved
    findings = [finding for path, content in pending.items() for finding in scan(path, content, canaries)]
    status = "rejected" if findings else "committed"
    # Findings hold the offending text itself, so they go to private/, never next to the release.
    with FileSystems.create(context.private("release_gate.json")) as handle:
        handle.write(json.dumps({"status": status, "findings": [f.__dict__ for f in findings]}, indent=2).encode())
    report = json.loads(pending[report_path])
    _move_files(pending, pending_dir, context.path("release.rejected" if findings else "release"))
    if ledger_path:
        set_ledger_status(ledger_path, context.run_id, status)
    if context.date:
        add_to_index(context, status, report if not findings else None)
    if findings:
        kinds = sorted({f.kind for f in findings})
        raise ReleaseGateFailed(f"release gate found {len(findings)} PII-like or canary string(s) ({', '.join(kinds)}); "
                                f"the release was moved to release.rejected/ and not published")
    return context.path("release", "report.json")


class FinalizeRun(beam.PTransform):
    def __init__(self, context: RunContext, canaries: tuple[str, ...], ledger_path: str | None):
        super().__init__()
        self._context = context
        self._canaries = canaries
        self._ledger_path = ledger_path

    def expand(self, report_paths):
        return report_paths | "gate, publish, commit ledger" >> beam.Map(
            finalize, self._context, self._canaries, self._ledger_path)
