"""Rebuilds the public topic timeline of a nightly output folder (a backfill, or after a failed rebuild).

    python -m beam_jobs.timeline OUTPUT

Reads OUTPUT/index.json and the release/report.json of each committed run (local or gs://) and
writes OUTPUT/timeline.json, timeline.html, timeline.csv and timeline.parquet, as every committed
nightly run does when it finishes (transforms/write_timeline.py). Released data only: no budget.
Exit codes: 0 written; 2 no readable index.json under OUTPUT.
"""

from __future__ import annotations

import argparse
import sys

from beam_jobs.logging_setup import configure_logging
from transforms.write_timeline import write_timeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="the nightly runs' output folder (holds index.json), local or gs://")
    args = parser.parse_args(argv)
    configure_logging()  # a run skipped for an unreadable report is a warning, as in the job's logs
    try:
        result = write_timeline(args.output)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    nights, topics = result["nights"], result["lineages"]
    print(f"timeline of {nights} night{'s' * (nights != 1)}, {topics} topic{'s' * (topics != 1)} ->")
    for path in result["files"].values():
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
