"""The in-process run's configuration on an evaluation's or bench's command line, declared once.

`--set FIELD=VALUE` (repeatable) overrides any UraniaConfig field, typed from its annotation ("inf",
"none" and "true"/"false" are understood). An evaluation that gives one of the job's flags a flag of its
own (`--num_clusters` for most) registers it with `add_config_flags`: the flag's type and help are the
job's (config/), and its default is the job's unless the evaluation names its own (the k its
data set is read at). `config_from` then builds the UraniaConfig from those flags and --set.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Sequence

from eval.urania_inprocess import UraniaConfig, job_flag

# add_config_flags(parser, num_clusters=JOB_DEFAULT): the flag keeps the job's default.
JOB_DEFAULT = object()


def add_config_flags(parser: argparse.ArgumentParser, overridable: bool = True, **defaults) -> None:
    """Registers, for each keyword, the job's flag of that name with this evaluation's default (JOB_DEFAULT:
    the job's own), and --set unless not `overridable` (a command that runs the Beam job, or none)."""
    hints = typing.get_type_hints(UraniaConfig)
    job_defaults = {field.name: field.default for field in dataclasses.fields(UraniaConfig)}
    for name, default in defaults.items():
        declared = job_flag(name)
        job_default = job_defaults[name]
        chosen = job_default if default is JOB_DEFAULT else default
        where = "the job's default" if chosen == job_default else f"this evaluation's default; the job's is {job_default}"
        parser.add_argument(f"--{name}", type=lambda value, hint=hints[name]: _convert(value, hint), default=chosen,
                            help=f"{declared.metadata['help']} ({where})")
    parser.set_defaults(config_flags=tuple(defaults))
    if not overridable:
        return
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a field of the in-process run's config (repeatable): "
                             + ", ".join(sorted(hints)))


def config_from(args: argparse.Namespace, **fixed) -> UraniaConfig:
    """The config from the flags add_config_flags registered, then --set, then `fixed` (what the evaluation
    itself decides)."""
    flags = {name: getattr(args, name) for name in args.config_flags}
    return UraniaConfig(**{**flags, **config_overrides(getattr(args, "set", ())), **fixed})


def config_overrides(pairs: Sequence[str], config: type = UraniaConfig) -> dict:
    """FIELD=VALUE pairs as fields of `config` (UraniaConfig, or eval.urania_inprocess.config_class of a job
    with more flags), typed from the field's annotation."""
    hints = typing.get_type_hints(config)
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in hints:
            raise SystemExit(f"--set {pair!r}: expected FIELD=VALUE with FIELD one of {', '.join(sorted(hints))}")
        try:
            overrides[key] = _convert(value, hints[key])
        except ValueError as error:
            raise SystemExit(f"--set {pair!r}: {error}") from None
    return overrides


def _convert(value: str, annotation) -> object:
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    if type(None) in options and value.lower() in ("none", "null"):
        return None
    kinds = [o for o in options if o is not type(None)]
    if len(kinds) > 1:  # int | float: the first that takes the value ("3" an int, "2.5" a float)
        for kind in kinds[:-1]:
            try:
                return _convert(value, kind)
            except ValueError:
                pass
    kind = kinds[-1]
    if typing.get_origin(kind) is typing.Literal:
        choices = {str(choice): choice for choice in typing.get_args(kind)}
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return choices[value]
    if kind is bool:
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"expected true or false, got {value!r}")
        return value.lower() in ("true", "1")
    return kind(value)
