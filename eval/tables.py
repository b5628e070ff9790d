"""Number and table formatting shared by the eval scripts: means that skip missing figures, cells of
printed and Markdown tables, (hits, total) shares, and rows written as CSV."""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections.abc import Iterable, Sequence


def mean(values: Iterable) -> float | None:
    """The mean of the figures that are there (None and NaN left out); None when none is."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.fmean(present) if present else None


def cell(value, spec: str = ".3f") -> str:
    """A table cell: "-" for None, "∞" for an infinite float, a float in `spec`, anything else as str."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else format(value, spec)
    return str(value)


def short_number(value: float) -> str:
    """A figure in few characters: a whole number >= 1 without decimals, any other to three
    significant digits, "∞" for infinity."""
    if math.isinf(value):
        return "∞"
    return f"{value:.0f}" if float(value).is_integer() and abs(value) >= 1 else f"{value:.3g}"


def count_share(pair: tuple[int, int]) -> str:
    """(hits, total) as "hits/total = share%"; the share of nothing is "-"."""
    hits, total = pair
    return f"{hits}/{total} = {hits / total:.1%}" if total else f"{hits}/{total} = -"


def write_csv(rows: Sequence[dict], path: str, columns: Sequence[str] | None = None) -> None:
    """The rows as CSV at `path` (its folder made if missing); columns: every key of the rows in the
    order first seen, unless given."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns or dict.fromkeys(k for r in rows for k in r)))
        writer.writeheader()
        writer.writerows(rows)
