"""A flag's declared bounds (core/params.py): pydantic checks them when a params object is built, the
message names the flag and says the range, None is left to the flag's own default, and a group's
check_values runs after them."""

from __future__ import annotations

import dataclasses
import math

import pytest

from core.params import Bounds, Params, check, flag


@pytest.mark.parametrize("bounds,text", [
    (Bounds(ge=1), ">= 1"), (Bounds(gt=0), "> 0"), (Bounds(le=5), "<= 5"), (Bounds(lt=0.5), "< 0.5"),
    (Bounds(gt=0, lt=1), "in (0, 1)"), (Bounds(ge=1, le=20), "in [1, 20]"), (Bounds(ge=0, lt=1), "in [0, 1)"),
    (Bounds(gt=0, finite=True), "> 0 and finite"), (Bounds(ge=-1, le=1, finite=True), "in [-1, 1]"),
    (Bounds(finite=True), "a finite number"),
])
def test_a_range_is_said_as_it_is_checked(bounds, text):
    assert bounds.describe() == text


@pytest.mark.parametrize("bounds,inside,outside", [
    (Bounds(ge=1), [1, 2, 10**9, math.inf], [0, -1, 0.999, math.nan]),
    (Bounds(gt=0, lt=1), [1e-12, 0.5, 1 - 1e-12], [0, 1, -0.5, math.nan]),
    (Bounds(ge=-1, le=1), [-1, 0, 1], [-1.01, 1.01]),
    (Bounds(gt=0, finite=True), [1e-300, 7.0], [0, math.inf, math.nan, -3]),
])
def test_values_inside_pass_and_values_outside_name_the_flag(bounds, inside, outside):
    for value in [*inside, None]:
        bounds.check("knob", value)
    for value in outside:
        with pytest.raises(ValueError, match=rf"^--knob must be .*, got {value!r}$"):
            bounds.check("knob", value)


@dataclasses.dataclass(frozen=True)
class _Group(Params):
    low: int = flag(1, "Low.", type=int, ge=1)
    high: int | None = flag(None, "High (default: no limit).", type=int, ge=1)

    def check_values(self):
        check(self.high is None or self.high >= self.low, "--high must be at least --low")


def test_bounds_run_before_the_groups_own_checks_and_on_every_copy():
    assert _Group(low=2, high=2).high == 2 and _Group().high is None
    with pytest.raises(ValueError, match="--low must be >= 1, got 0"):
        _Group(low=0, high=-5)  # the bound is reported, not the relation
    with pytest.raises(ValueError, match="--high must be at least --low"):
        _Group(low=3, high=2)
    with pytest.raises(ValueError, match="--high must be >= 1"):
        dataclasses.replace(_Group(), high=0)


def test_a_flag_without_bounds_declares_none():
    assert dataclasses.fields(_Group)[0].metadata["bounds"] == Bounds(ge=1)
    assert flag(1, "x", type=int).metadata["bounds"] is None
