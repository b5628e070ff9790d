"""A params dataclass's fields: flags (`flag`) and internal settings (`setting`), and the checks and
public view they share.

Beam-free, and in core, so that a layer below the jobs declares its own flags where it reads them:
backends.llm.config.LLMParams is both the --llm_* flags and the settings the workers use. The jobs
register and parse those flags with Beam (beam_jobs/flags.py, which explains the design).
"""

from __future__ import annotations

import dataclasses
from typing import Any


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


def setting(default: Any, why: str) -> Any:
    """A dataclass field that is not a flag: no --<field name>, not documented, never public. For values
    the code fixes (and tests change), that a user has no reason to set; `why` says why it is fixed."""
    return dataclasses.field(default=default, metadata={"setting": why})


def flag_fields(params) -> tuple[dataclasses.Field, ...]:
    """The fields of a params class or object that are flags (its `setting`s left out), in order."""
    return tuple(field for field in dataclasses.fields(params) if "help" in field.metadata)


def public_fields(params) -> dict:
    """The fields of a params object declared public=True, by name."""
    return {field.name: getattr(params, field.name) for field in flag_fields(params) if field.metadata["public"]}


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
