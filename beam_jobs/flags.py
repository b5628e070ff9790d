"""Flags declared once, as the fields of a frozen params dataclass, and parsed by Beam.

A group of options is one dataclass (beam_jobs/options.py, beam_jobs/keyword_options.py): each
field is a flag of the same name (`flag(default, help, ...)`), passed as --name value or, as
Dataflow and Flex Templates pass it, --name=value. The dataclass checks itself in __post_init__,
raising a ValueError that names the first bad flag, so a params object is valid once it exists.
Those checks are of the values only, never of the machine: what the flags need of it (software, a
model, a project) is checked by a job's preflight at launch (LLMParams.preflight).
A field declared `public=True` may appear in the released report's configuration; every other
field stays out of it (paths, seeds, endpoints, operational knobs).

A group's PipelineOptions class only registers its dataclass's flags (`add_flags`): Beam calls
`_add_argparse_args` of every class in a view's MRO, so a job's options class is the union of
the groups it needs, and `params_from` turns the parsed values into the typed params.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, TypeVar

from apache_beam.options.pipeline_options import PipelineOptions

ParamsT = TypeVar("ParamsT")


def parse_bool(value: str) -> bool:
    """A boolean flag's value as Flex Templates pass it (a string)."""
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def flag(default: Any, help: str, *, public: bool = False, **argparse_kwargs) -> Any:
    """A dataclass field that is also the flag --<field name> (argparse_kwargs: type, choices, nargs...)."""
    return dataclasses.field(default=default, metadata={"help": help, "public": public, "argparse": argparse_kwargs})


def add_flags(parser, params_class: type) -> None:
    """Registers params_class's fields as flags on an argparse parser or argument group."""
    for field in dataclasses.fields(params_class):
        parser.add_argument(f"--{field.name}", default=field.default, help=field.metadata["help"],
                            **field.metadata["argparse"])


def params_from(values, params_class: type[ParamsT]) -> ParamsT:
    """params_class from parsed flags (a PipelineOptions view or an argparse.Namespace); raises
    ValueError naming the first bad flag. The parsed values themselves are left untouched."""
    return params_class(**{field.name: getattr(values, field.name) for field in dataclasses.fields(params_class)})


def options_class(params_class: type) -> type[PipelineOptions]:
    """The PipelineOptions class that registers `params_class`'s flags (FooParams -> FooOptions)."""
    def _add_argparse_args(cls, parser):
        add_flags(parser, params_class)

    name = params_class.__name__.removesuffix("Params") + "Options"
    return type(name, (PipelineOptions,), {"_add_argparse_args": classmethod(_add_argparse_args),
                                           "__doc__": f"The flags of {params_class.__name__}."})


def public_fields(params) -> dict:
    """The fields of a params object declared public=True, by name."""
    return {field.name: getattr(params, field.name) for field in dataclasses.fields(params)
            if field.metadata["public"]}


class Params:
    """Base of the params dataclasses: what the report may show of a group."""

    def public_config(self) -> dict:
        """The group's public fields and the public values it derives from private ones."""
        return {**public_fields(self), **self.derived_public_values()}

    def derived_public_values(self) -> dict:
        """Public facts about private fields (e.g. whether a seed was fixed, never the seed); none by default."""
        return {}


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


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
