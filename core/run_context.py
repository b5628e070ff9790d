"""Where a run reads and writes, and under which id and date it is recorded."""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets

from apache_beam.io.filesystems import FileSystems

from core.dates import day_of_run_id, resolve_date, run_id_prefix, utc_now

DATE_PLACEHOLDER = "{date}"
# The run's private folder (under the output, or under --private_output), and where the release gate
# keeps a report waiting for it and a release it rejected: both inside the private folder.
PRIVATE_FOLDER = "private"
PENDING_FOLDER = "release.pending"
REJECTED_FOLDER = "release.rejected"


@dataclasses.dataclass(frozen=True)
class RunContext:
    run_id: str
    date: str | None
    input_pattern: str
    output_root: str
    run_dir: str
    private_dir: str

    @property
    def ledger_date(self) -> str:
        """The run's date, or the UTC day it started (run ids start with YYYYMMDD)."""
        return self.date or day_of_run_id(self.run_id)

    def path(self, *parts: str) -> str:
        """A path under the run's folder (release side)."""
        return FileSystems.join(self.run_dir, *parts)

    def private(self, *parts: str) -> str:
        """A path under the run's private folder (RUN/private, or under --private_output)."""
        return FileSystems.join(self.private_dir, *parts)

    @property
    def report_pending(self) -> str:
        """Where the report waits for the release gate: under the private folder, never beside
        release/ (a pending or rejected release is unreviewed, and may hold what the gate rejects)."""
        return self.private(PENDING_FOLDER, "report.json")

    @property
    def rejected_dir(self) -> str:
        """Where a release the gate rejected is kept: private, like the findings."""
        return self.private(REJECTED_FOLDER)

    @property
    def index(self) -> str:
        return FileSystems.join(self.output_root, "index.json")


def make_run_context(input_pattern: str, output: str, date_flag: str | None, now: dt.datetime | None = None,
                     private_output: str | None = None) -> RunContext:
    now = now or utc_now()
    run_id = run_id_prefix(now) + "-" + secrets.token_hex(3)
    date = resolve_date(date_flag, now.date())
    if DATE_PLACEHOLDER in input_pattern and date is None:
        raise ValueError("--input has a {date} placeholder; give --date")
    pattern = input_pattern.replace(DATE_PLACEHOLDER, date) if date else input_pattern
    # Dated runs never overwrite each other: each gets its own folder, listed in OUTPUT/index.json.
    run_folder = (f"dt={date}", f"run={run_id}") if date else ()
    run_dir = FileSystems.join(output, *run_folder) if run_folder else output
    # Private outputs may live in their own bucket (tighter access, shorter retention).
    private_root = private_output or output
    private_dir = FileSystems.join(private_root, *run_folder, PRIVATE_FOLDER)
    return RunContext(run_id=run_id, date=date, input_pattern=pattern, output_root=output, run_dir=run_dir,
                      private_dir=private_dir)
