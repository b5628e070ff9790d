"""Flags declared once, as the fields of a frozen params dataclass, and parsed by Beam.

A group of options is one dataclass (config/, one module per group, the LLM group config/llm.py and the
keyword-set builder's config/keyword_set.py; the backends read them as they are): each field is a flag of the
same name (`flag(default, help, ...)`, or `advanced_flag` for one a user rarely sets: core/params.py),
passed as --name value or, as Dataflow and Flex Templates pass it, --name=value. A field declared with
`setting(default, why)` instead is not a flag: the code fixes it (tests may change it), and it is
neither registered, parsed nor documented.
A flag's numeric bounds are declared with it (`flag(..., ge=1)`) and checked by pydantic when the
object is built; the group's `check_values` adds what a bound cannot say. Either raises a ValueError
that names the first bad flag, so a params object is valid once it exists. Those checks are of the
values only, never of the machine: what the flags need of it (software, a model, a project) is
checked by a job's preflight at launch (backends.llm.config.preflight, beam_jobs/launch_checks.py). A field
declared `public=True` may appear in the released report's configuration; every other field stays out of
it (paths, seeds, endpoints, operational knobs).

A group's PipelineOptions class only registers its dataclass's flags (`add_flags`): Beam calls
`_add_argparse_args` of every class in a view's MRO, so a job's options class is the union of
the groups it needs, and `params_from` turns the parsed values into the typed params.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Callable
from typing import TypeVar

from apache_beam.options.pipeline_options import PipelineOptions

from core.params import flag_fields

ParamsT = TypeVar("ParamsT")


def add_flags(parser, params_class: type, describe: Callable[[dataclasses.Field], str] | None = None,
              only: tuple[str, ...] | None = None,
              metavar: Callable[[dataclasses.Field], str | None] | None = None) -> None:
    """Registers params_class's flags (its settings left out; only those named in `only`, if given) on an
    argparse parser or argument group; describe(field), if given, is a flag's help text there (default:
    the declared help, as is), and metavar(field), if given, the name of its value in that help (None:
    argparse's)."""
    for field in flag_fields(params_class):
        if only is not None and field.name not in only:
            continue
        shown = {"metavar": metavar(field)} if metavar else {}
        parser.add_argument(f"--{field.name}", default=field.default,
                            help=describe(field) if describe else field.metadata["help"],
                            **shown, **field.metadata["argparse"])


def params_from(values, params_class: type[ParamsT]) -> ParamsT:
    """params_class from parsed flags (a PipelineOptions view or an argparse.Namespace); raises
    ValueError naming the first bad flag. The parsed values themselves are left untouched."""
    return params_class(**{field.name: getattr(values, field.name) for field in flag_fields(params_class)})


def options_class(params_class: type) -> type[PipelineOptions]:
    """The PipelineOptions class that registers `params_class`'s flags (FooParams -> FooOptions). Two jobs
    sharing a group each make its class; Beam registers the flags of one class per name. Not cached: a
    class lives as long as its job's options class (Beam parses every live PipelineOptions subclass)."""
    def _add_argparse_args(cls, parser):
        add_flags(parser, params_class)

    name = params_class.__name__.removesuffix("Params") + "Options"
    return type(name, (PipelineOptions,), {"_add_argparse_args": classmethod(_add_argparse_args),
                                           "__doc__": f"The flags of {params_class.__name__}."})


def job_options(job: type, name: str, module: str) -> type[PipelineOptions]:
    """A job's PipelineOptions class (`name`, in `module`): the options class of each group of `job`, a
    dataclass whose fields are its params groups, in their order, so a view of it parses every flag the
    job has and a group added to the job's params needs nothing here."""
    groups = typing.get_type_hints(job)
    return type(name, tuple(options_class(groups[field.name]) for field in dataclasses.fields(job)),
                {"__doc__": f"Every flag of {job.__name__}, group by group.", "__module__": module})


def argument_parser(options_class: type[PipelineOptions]) -> argparse.ArgumentParser:
    """The flags Beam parses for a view of options_class, as one plain argparse parser (Beam
    registers the groups of the class's MRO up to PipelineOptions, as here)."""
    parser = argparse.ArgumentParser()
    for cls in options_class.mro():
        if cls is PipelineOptions:
            break
        if "_add_argparse_args" in cls.__dict__:
            cls._add_argparse_args(parser)
    return parser
