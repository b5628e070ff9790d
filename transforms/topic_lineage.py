"""AssignLineages: the released topics' lineage ids and their centres for report.json (publishing/lineage.py).

Post-processing of the DP centres and the kept cluster ids, matched against lineages read from
earlier released reports (public): no budget.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from dp_ops.dp_kmeans import to_embedding_space
from publishing.lineage import assign_lineages, centres_section
from publishing.previous_nights import PreviousNights


def lineage_section(centres: np.ndarray, basis: np.ndarray | None, kept_ids: list[int], previous: PreviousNights,
                    new_id_prefix: str, model: str) -> dict:
    """{"lineages": {cluster id: lineage id}, "centres": publishing.lineage.centres_section} for the kept clusters."""
    directions = to_embedding_space(centres, basis)
    kept = {int(c): directions[int(c)] for c in kept_ids}
    return {"lineages": assign_lineages(kept, list(previous.known), new_id_prefix, seeded=previous.seeded()),
            "centres": centres_section(kept, model)}


class AssignLineages(beam.PTransform):
    """Input: the DP centres (singleton). Side inputs: the clustering basis (singleton) and the kept
    cluster ids. Output: a singleton lineage_section."""

    def __init__(self, basis, kept_ids, previous: PreviousNights, new_id_prefix: str, model: str):
        super().__init__()
        self._basis, self._kept_ids = basis, kept_ids
        self._previous, self._prefix, self._model = previous, new_id_prefix, model

    def local(self, centres: np.ndarray) -> dict:
        """In-process: `basis` an array or None, `kept_ids` the kept cluster ids."""
        return lineage_section(centres, self._basis, list(self._kept_ids), self._previous, self._prefix, self._model)

    def expand(self, centres):
        return centres | "match centres to lineages" >> beam.Map(
            lineage_section, beam.pvalue.AsSingleton(self._basis), beam.pvalue.AsList(self._kept_ids),
            self._previous, self._prefix, self._model)
