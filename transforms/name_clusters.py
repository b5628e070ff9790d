"""NameClusters: (cluster_id, DP top keywords) -> name and description, via a ClusterNamer.

The namer sees the DP-released keywords and nothing else, so its output is post-processing.
"""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import ClusterNamer
from transforms.stage_timing import timed


class _NameClusterFn(beam.DoFn):
    def __init__(self, namer: ClusterNamer):
        self._namer = namer

    def setup(self):
        self._namer.setup()
        self._timed_name = timed("name_clusters", self._namer.name)

    def teardown(self):
        self._namer.teardown()

    def process(self, cluster_and_keywords):
        cluster_id, keywords = cluster_and_keywords
        name, description = self._timed_name(list(keywords))
        yield cluster_id, {"name": name, "description": description, "keywords": list(keywords)}


class NameClusters(beam.PTransform):
    def __init__(self, namer: ClusterNamer):
        super().__init__()
        self._namer = namer

    def expand(self, top_keywords):
        return top_keywords | "name each cluster from its keywords" >> beam.ParDo(_NameClusterFn(self._namer))
