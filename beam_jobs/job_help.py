"""The jobs' `--help`: every flag of a job's params groups, from the declarations docs/options.md comes from.

Beam's PipelineOptions(argv) answers --help with the parser of its base class only (`usage: insights.py
[-h]`), so each job's run(argv) answers it first, before any other work (no preflight, no ledger, no
data): `if help_requested(argv): return print_help(...)`. The help has an argparse argument group per
params group of the job, with the heading and intro docs/options.md gives it (option_docs.groups), and
each flag registered by flags.add_flags as Beam registers it (type, choices, nargs); its text is the
declared help followed by its default as docs/options.md shows it, or by what makes it required. The
retired flags keep their help, which says they are retired, and show no default.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence

from beam_jobs import option_docs
from beam_jobs.flags import add_flags
from config.privacy import RETIRED_FLAGS

HELP_FLAGS = ("-h", "--help")
BEAM_OPTIONS = """\
Beam's own pipeline options are accepted too and go to Beam: --runner, --project, --region,
--temp_location, --staging_location, --direct_running_mode, --direct_num_workers, Dataflow's worker
and service options, ... (docs/options.md, Standard Beam flags; docs/production.md)."""


def help_requested(argv: Sequence[str] | None) -> bool:
    """Whether the command line (sys.argv[1:] if None) asks for -h or --help."""
    return any(arg in HELP_FLAGS for arg in (sys.argv[1:] if argv is None else argv))


def _metavar(field: dataclasses.Field) -> str:
    choices = field.metadata["argparse"].get("choices")
    return "{" + ",".join(map(str, choices)) + "}" if choices else field.name.upper()


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions (the module's and the groups' docstrings) kept as written, blank lines left blank."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line if line.strip() else line for line in text.splitlines(keepends=True))


def help_parser(job: type, *, prog: str, description: str, required: Mapping[str, str],
                required_when: Mapping[str, Mapping[str, str]] | None = None) -> argparse.ArgumentParser:
    """The parser whose help lists `job`'s flags (job: a dataclass of params dataclasses, as
    options.InsightsParams). required: the flags the job cannot run without, each with what it is;
    required_when: condition ("with --method tfidf") -> the flags it requires, each with what it is."""
    notes = {name: f"required: {what}" for name, what in required.items()}
    for condition, flags in (required_when or {}).items():
        notes.update({name: f"required {condition}: {what}" for name, what in flags.items()})
    fields = {field.name: field for group in option_docs.groups(job) for field in group.fields}
    unknown = sorted(set(notes) - set(fields))
    if unknown:
        raise ValueError(f"required flags that {job.__name__} does not declare: {', '.join(unknown)}")

    def describe(field: dataclasses.Field) -> str:
        text = " ".join(field.metadata["help"].split())
        if field.name not in RETIRED_FLAGS:
            text += f" ({notes.get(field.name) or 'default: ' + option_docs.default_text(field)})"
        return text.replace("%", "%%")  # argparse %-formats each help

    usage = " ".join([prog, *(f"--{name} {_metavar(fields[name])}" for name in required), "[options]",
                      "[Beam pipeline options]"])
    parser = argparse.ArgumentParser(prog=prog, usage=usage, description=description, epilog=BEAM_OPTIONS,
                                     formatter_class=_Formatter, allow_abbrev=False)
    for group in option_docs.groups(job):
        add_flags(parser.add_argument_group(group.heading, group.intro), group.params_class, describe)
    return parser


def print_help(job: type, **kwargs) -> int:
    """Prints help_parser(job, **kwargs)'s help to stdout; returns the exit code, 0."""
    help_parser(job, **kwargs).print_help(sys.stdout)
    return 0
