"""The jobs' `--help`: every flag of a job's params groups, from the declarations docs/options.md comes from.

Beam's PipelineOptions(argv) answers --help with the parser of its base class only (`usage: insights.py
[-h]`), so each job's run(argv) answers it first, before any other work (no preflight, no ledger, no
data): `if help_requested(argv): return print_help(...)`.

It leads with the flags a user sets: an argparse argument group per params group of the job that has
any, with the heading docs/options.md gives it and the first paragraph of its intro (option_docs.groups),
then one last group, Advanced, with every advanced flag (core/params.py `advanced_flag`), group by group,
as docs/options.md lists them. Each flag is registered by flags.add_flags as Beam registers it (type,
choices, nargs); its text is the first sentence of its declared help (`summary`: docs/options.md has the
rest) followed by what makes it required, or by its default as docs/options.md shows it: none for an
unset one (the help says what leaving it out does) or a retired one (its help says it is retired).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence

from beam_jobs import option_docs
from config.flags import add_flags
from config.privacy import RETIRED_FLAGS
from core.params import parse_bool

HELP_FLAGS = ("-h", "--help")
EPILOG = """\
Each flag's whole text is on docs/options.md, in the same groups.

Beam's own pipeline options are accepted too and go to Beam: --runner, --project, --region,
--temp_location, --staging_location, --direct_running_mode, --direct_num_workers, Dataflow's worker
and service options, ... (docs/options.md, Standard Beam flags; docs/production.md)."""
# A sentence ends at ".", "!" or "?" before a capital letter or the end of the text, where its parentheses
# are closed: "e.g. http://...", "(docs/privacy.md). count: ..." and "(a. B)" end none.
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z]|\s*$)")
# Numbers' placeholders: "--num_clusters N" fits beside its help, "--num_clusters NUM_CLUSTERS" does not.
TYPE_METAVARS = {int: "N", float: "X", parse_bool: "true|false"}
# A paragraph laid out by hand: a line that is indented (a command) or a list item.
_LAID_OUT = re.compile(r"^(\s|- )", re.M)


def help_requested(argv: Sequence[str] | None) -> bool:
    """Whether the command line (sys.argv[1:] if None) asks for -h or --help."""
    return any(arg in HELP_FLAGS for arg in (sys.argv[1:] if argv is None else argv))


def summary(help_text: str) -> str:
    """A flag's help as --help shows it: the first sentence of its declared help (all of it where no
    sentence ends before its end). docs/options.md shows the whole help."""
    text = " ".join(help_text.split())
    for end in _SENTENCE_END.finditer(text):
        sentence = text[:end.end()]
        if sentence.count("(") == sentence.count(")"):
            return sentence
    return text


def _metavar(field: dataclasses.Field) -> str:
    """The flag's value in the usage line and its entry: its choices, a number's N or X, else its name."""
    kwargs = field.metadata["argparse"]
    if kwargs.get("choices"):
        return "{" + ",".join(map(str, kwargs["choices"])) + "}"
    return TYPE_METAVARS.get(kwargs.get("type"), field.name.upper())


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions (the module's docstring, the groups' intros, the epilog): each paragraph of prose
    filled to the width; one with an indented line (a command) or a list item kept as written; blank
    lines between them."""

    def _fill_text(self, text, width, indent):
        return "\n\n".join(
            textwrap.indent(paragraph, indent) if _LAID_OUT.search(paragraph)
            else textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent, subsequent_indent=indent)
            for paragraph in re.split(r"\n\s*\n", text.strip("\n")))


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
        text = summary(field.metadata["help"])
        if field.name in notes:
            text += f" ({notes[field.name]})"
        elif field.name not in RETIRED_FLAGS and field.default not in (None, ""):
            text += f" (default: {option_docs.default_text(field)})"  # unset: nothing to say, or the help says it
        return text.replace("%", "%%")  # argparse %-formats each help

    def metavar(field: dataclasses.Field) -> str | None:
        return None if field.metadata["argparse"].get("choices") else _metavar(field)  # argparse lists choices

    usage = " ".join([prog, *(f"--{name} {_metavar(fields[name])}" for name in required), "[options]",
                      "[Beam pipeline options]"])
    parser = argparse.ArgumentParser(prog=prog, usage=usage, description=description, epilog=EPILOG,
                                     formatter_class=_Formatter, allow_abbrev=False)
    groups = option_docs.groups(job)
    for group in groups:
        if group.user_fields:
            add_flags(parser.add_argument_group(group.heading, group.summary), group.params_class, describe,
                      only=_names(group.user_fields), metavar=metavar)
    advanced = parser.add_argument_group(option_docs.ADVANCED_HEADING, option_docs.ADVANCED_INTRO)
    for group in groups:
        add_flags(advanced, group.params_class, describe, only=_names(group.advanced_fields), metavar=metavar)
    return parser


def _names(fields: tuple[dataclasses.Field, ...]) -> tuple[str, ...]:
    return tuple(field.name for field in fields)


def print_help(job: type, **kwargs) -> int:
    """Prints help_parser(job, **kwargs)'s help to stdout; returns the exit code, 0."""
    help_parser(job, **kwargs).print_help(sys.stdout)
    return 0
