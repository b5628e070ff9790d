"""What tonight takes from the released nights before it (the warm start, the lineages it may continue,
and the themes that rose with no topic about them): post-processing of public reports only.

The reports are public files that anyone with write access to the release bucket could alter: what is
read from them is checked by publishing/lineage.py, and nothing in them may fail the night.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection

import numpy as np

from publishing.lineage import KnownLineage, inheritable_lineage, known_lineages, released_topics, report_centres
from publishing.theme_timeline import themes_to_seed

log = logging.getLogger("urania.lineage")


@dataclasses.dataclass(frozen=True)
class PreviousNights:
    """What tonight takes from the released nights before it: the lineages it may continue, and the
    warm start (the latest night's topic centres, largest first, seeded as clusters 0, 1, ... in
    that order, and the lineage each of them carries)."""

    known: tuple[KnownLineage, ...] = ()
    warm_centres: np.ndarray | None = None
    warm_lineages: tuple[str | None, ...] = ()
    # Themes that rose with no released topic about them (publishing.theme_timeline.themes_to_seed): tonight's
    # k-means seeds a centre at each one's anchor, after the warm centres (make_room).
    seed_themes: tuple[str, ...] = ()

    @classmethod
    def of(cls, reports: list[dict], model: str, warm_start: bool = True, dim: int | None = None,
           committed: Collection[str] | None = None) -> "PreviousNights":
        """From `reports` (released nights, oldest first). `committed`: every committed night of the
        output folder (publishing.released_runs.committed_dates), which a lineage id's date must be one of;
        None (in-process) checks the ids' form and dates only."""
        known = tuple(known_lineages(reports, model, dim, committed))
        seed_themes = _themes_to_seed(reports) if warm_start else ()
        latest = reports[-1] if reports and warm_start else {}
        centres = report_centres(latest, model, dim)
        seeds = [t for t in released_topics(latest) if t["id"] in centres]
        if not seeds:
            return cls(known, seed_themes=seed_themes)
        return cls(known, np.stack([centres[t["id"]] for t in seeds]),
                   tuple(inheritable_lineage(t, latest, committed) for t in seeds), seed_themes)

    def make_room(self, num_clusters: int) -> "PreviousNights":
        """With the seed themes' centres after the warm ones, at most `num_clusters` in all: the smallest of
        last night's topics give up their seeds (they are seeded largest first) and their lineage bonus."""
        keep = max(0, num_clusters - len(self.seed_themes))
        if self.warm_centres is None or len(self.warm_centres) <= keep:
            return self
        return dataclasses.replace(self, warm_centres=self.warm_centres[:keep],
                                   warm_lineages=self.warm_lineages[:keep])

    def seeded(self) -> dict[int, str]:
        """Tonight's cluster id -> the lineage of the warm centre it was seeded from."""
        return {cluster: lineage for cluster, lineage in enumerate(self.warm_lineages) if lineage}


def _themes_to_seed(reports: list[dict]) -> tuple[str, ...]:
    """publishing.theme_timeline.themes_to_seed, or none should the earlier (public, editable) reports make it
    fail: a seed is worth no night."""
    try:
        return themes_to_seed(reports)
    except Exception as error:  # whatever an altered earlier report leads to
        log.warning("risen themes unreadable: no theme seeds", extra={"event": "theme_seeds_failed", "error": str(error)})
        return ()
