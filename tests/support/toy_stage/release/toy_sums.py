"""The toy stage (tests/support/toy_stage/): its transform and its release stage, on both engines. Found by
transforms.release_stages.registered() when this folder is on that package's path."""

from __future__ import annotations

import apache_beam as beam

from tests.support.toy_stage.toy_mechanism import COLUMN, PARTITION, TOY_SUMS, toy_request
from transforms.dp_votes import DPKeywordVotes
from transforms.release_stage import ReleaseStage, StageInputs, StageRelease, noise_multiplier


def _votes(block):
    return [(int(cluster), COLUMN, float(weight)) for cluster, weight in zip(block.cluster_ids, block.weights)]


def _per_topic(release) -> dict:
    return {int(cluster): round(value, 2) for (cluster, _), value in dict(release).items()}


class ToySums(beam.PTransform):
    """Input: the assigned blocks. Output: (cluster id, noisy users) per kept topic, and the section (a
    singleton on Beam): how many topics it released."""

    def __init__(self, num_clusters: int, kept_ids, multiplier, delta, budget, noise_seed):
        super().__init__()
        self.release = DPKeywordVotes(num_clusters, PARTITION.columns, multiplier, delta, kept_ids, budget, noise_seed,
                                      spend_of=PARTITION.spend, noise_stream=PARTITION.noise_stream)

    def local(self, blocks) -> tuple:
        per_topic = _per_topic(self.release.local([vote for block in blocks for vote in _votes(block)]))
        return per_topic.items(), {"topics": len(per_topic)}

    def expand(self, blocks):
        per_topic = (blocks | "votes" >> beam.FlatMap(_votes) | "DP toy sums" >> self.release
                     | "per topic" >> beam.MapTuple(lambda key, value: (int(key[0]), round(value, 2))))
        section = (per_topic | "count topics" >> beam.combiners.Count.Globally()
                   | "section" >> beam.Map(lambda count: {"topics": count}))
        return per_topic, section


class Toy(ReleaseStage):
    name = TOY_SUMS
    dp_stages = (TOY_SUMS,)
    report_key = TOY_SUMS
    topic_field = "toy_users"

    def enabled(self, plan) -> bool:
        return plan.params.keywords.toy_sums

    def requests(self, params):
        return [toy_request(params.privacy.stage_weights()[TOY_SUMS])] if params.keywords.toy_sums else []

    def build(self, engine, inputs: StageInputs, plan, budget) -> StageRelease:
        per_topic, section = engine.apply("toy sums", ToySums(
            plan.kmeans.num_clusters, inputs.kept_ids, noise_multiplier(plan, TOY_SUMS), plan.delta, budget,
            plan.noise_seed), inputs.assigned)
        return StageRelease(section=section, topic_fields=per_topic)


STAGE = Toy()
