"""A params dataclass's fields: flags (`flag`) and internal settings (`setting`), and the checks and
public view they share.

Beam-free, and in core, so that a layer below the jobs declares its own flags where it reads them:
config.llm.LLMParams is both the --llm_* flags and the settings the workers use. The jobs
register and parse those flags with Beam (config/flags.py, which explains the design).

A flag's bounds (ge, gt, le, lt, finite) are declared with it and checked by pydantic when the params
object is built; docs/options.md and the Flex Template's regexes are generated from the same
declaration (beam_jobs/option_docs.py), so a bound is written once. What a bound cannot say (a
relation between flags, a format) is the group's `check_values`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Annotated, Any

import pydantic
import pydantic.dataclasses


def parse_bool(value: str) -> bool:
    """A boolean flag's value as Flex Templates pass it (a string)."""
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A numeric flag's declared range; `finite` also refuses inf and nan. An unset (None) value is not
    checked: None means the flag's own default behaviour."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    finite: bool = False

    @property
    def lowest(self) -> float | None:
        return self.ge if self.ge is not None else self.gt

    def describe(self) -> str:
        """The range in words: ">= 1", "in (0, 1)", "in [1, 20]", "> 0 and finite"."""
        # (bracket, comparison, value) of each side that is bounded
        low = ("[", ">=", self.ge) if self.ge is not None else ("(", ">", self.gt) if self.gt is not None else None
        high = ("]", "<=", self.le) if self.le is not None else (")", "<", self.lt) if self.lt is not None else None
        if low and high:
            return f"in {low[0]}{_number(low[2])}, {_number(high[2])}{high[0]}"  # finite already
        if not (low or high):
            return "a finite number" if self.finite else "a number"
        _, comparison, value = low or high
        return f"{comparison} {_number(value)}" + (" and finite" if self.finite else "")

    def check(self, name: str, value) -> None:
        """Raises ValueError naming --name unless value is None or within the bounds."""
        if value is None:
            return
        try:
            _validator(self).validate_python(value, strict=False)
        except pydantic.ValidationError:
            raise ValueError(f"--{name} must be {self.describe()}, got {value!r}") from None


@functools.cache
def _validator(bounds: Bounds) -> pydantic.TypeAdapter:
    # Built once per declared range and kept here, not on the Bounds, so a pickled params object carries none.
    constraint = pydantic.Field(ge=bounds.ge, gt=bounds.gt, le=bounds.le, lt=bounds.lt, allow_inf_nan=not bounds.finite)
    return pydantic.TypeAdapter(Annotated[float, constraint])


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:g}"


def flag(default: Any, help: str, *, public: bool = False, ge: float | None = None, gt: float | None = None,
         le: float | None = None, lt: float | None = None, finite: bool = False, **argparse_kwargs) -> Any:
    """A dataclass field that is also the flag --<field name> (argparse_kwargs: type, choices, nargs...),
    with its numeric bounds, if any (checked when the params object is built, and in both generated
    documents). A flag a user sets: the jobs' --help and docs/options.md list it in its group, before the
    advanced ones (`advanced_flag`). The first sentence of `help` is all that --help shows of it, so it
    stands alone; the rest is on docs/options.md."""
    bounds = Bounds(ge, gt, le, lt, finite)
    return dataclasses.field(default=default, metadata={"help": help, "public": public, "advanced": False,
                                                        "bounds": None if bounds == Bounds() else bounds,
                                                        "argparse": argparse_kwargs})


def advanced_flag(default: Any, help: str, **declaration) -> Any:
    """A flag (`flag`'s arguments) that a user rarely sets: an evaluation, research or tuning knob whose
    default is the product's. The jobs' --help and docs/options.md list it in their last group, Advanced,
    after every flag a user sets."""
    declared = flag(default, help, **declaration)
    return dataclasses.field(default=default, metadata={**declared.metadata, "advanced": True})


def is_advanced(field: dataclasses.Field) -> bool:
    """Whether a flag was declared with `advanced_flag`."""
    return field.metadata["advanced"]


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


def params_group(cls: type) -> type:
    """A params group: a frozen pydantic dataclass, so building one checks each field's type (lax: "5"
    is 5 for an int, 5 is 5.0 for a float), then its declared bounds and choices, then `check_values`."""
    group = pydantic.dataclasses.dataclass(frozen=True)(cls)
    validating_init = group.__init__

    @functools.wraps(validating_init)
    def __init__(self, *args, **kwargs):
        try:
            validating_init(self, *args, **kwargs)
        except pydantic.ValidationError as error:
            raise ValueError(_one_line(error)) from None

    group.__init__ = __init__
    return group


def _one_line(error: pydantic.ValidationError) -> str:
    """A job's error names the flag in one line, as the hand-written checks did: our own ValueError's
    message as it was raised, or pydantic's type error under the flag's name."""
    first = error.errors()[0]
    if first["type"] == "value_error":
        return str(first["ctx"]["error"])
    name = ".".join(map(str, first["loc"]))
    return f"--{name}: {first['msg'][0].lower()}{first['msg'][1:]}, got {first['input']!r}"


class Params:
    """Base of the params dataclasses: their checks, and what the report may show of a group.

    A params object is valid once it exists: building it checks every flag's declared bounds, then the
    group's own `check_values`."""

    def __post_init__(self):
        for field in flag_fields(self):
            value = getattr(self, field.name)
            if field.metadata["bounds"] is not None:
                field.metadata["bounds"].check(field.name, value)
            choices = field.metadata["argparse"].get("choices")
            # argparse checks a parsed flag's choices; this checks a group built in code (an evaluation's config)
            check(value is None or choices is None or value in choices,
                  f"--{field.name} must be one of {', '.join(map(str, choices or ()))}, got {value!r}")
        self.check_values()

    def check_values(self) -> None:
        """The group's checks that its flags' bounds cannot state (relations between flags, formats);
        raises ValueError naming the first bad flag. None by default."""

    def public_config(self) -> dict:
        """The group's public fields and the public values it derives from private ones."""
        return {**public_fields(self), **self.derived_public_values()}

    def derived_public_values(self) -> dict:
        """Public facts about private fields (e.g. whether a seed was fixed, never the seed); none by default."""
        return {}


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)
