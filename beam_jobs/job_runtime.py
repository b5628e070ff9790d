"""What the job entry points share around the pipeline: exit codes, error reporting, the input
check and the local engine. (beam_jobs.insights and beam_jobs.build_keywords both use these.)"""

from __future__ import annotations

import logging
import sys

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

log = logging.getLogger("urania")

EXIT_FAILED = 1
EXIT_BAD_OPTIONS = 2
EXIT_UNREADABLE_INPUT = 3
EXIT_BUDGET_REFUSED = 4
EXIT_RELEASE_GATE_FAILED = 5


def check_input_matches(pattern: str) -> None:
    try:
        matches = FileSystems.match([pattern])[0].metadata_list
    except Exception as error:
        raise FileNotFoundError(f"cannot list --input {pattern}: {error}") from error
    if not matches:
        raise FileNotFoundError(f"--input {pattern} matches no file")


def use_local_engine(pipeline_options: PipelineOptions) -> None:
    """Runs "DirectRunner" pipelines on its in-process engine (FnApiRunner) directly.

    Beam 2.77's DirectRunner first tries the Prism runner, which downloads a binary from GitHub at
    run time; without network it falls back after a failed download. The FnApiRunner is the engine
    it falls back to, and it honours --direct_running_mode and --direct_num_workers.
    """
    standard = pipeline_options.view_as(StandardOptions)
    if standard.runner in (None, "DirectRunner"):
        standard.runner = "FnApiRunner"


def fail(code: int, event: str, message: str, **fields) -> int:
    log.error(message, extra={"event": event, "exit_code": code, **fields})
    print(f"error: {message}", file=sys.stderr)
    return code
