"""TokenDecoding: --token_decoding_steps T, each kept topic's description decoded token by token under DP
(dp_ops/token_decoding.py: the sample, sensitivity and accounting; backends/token_decoder.py: the model).

The assigned conversations -> (cluster id, {"description", "evidence": "dp_token_decoded"}) for EVERY kept
topic: a topic none of whose users chose it still gets a (pure-noise) description, so which topics are
described says nothing beyond the kept set, which is already public. The sample size actually drawn is
never output. A topic whose decoding fails is dead-lettered alone (its description missing); the others
are released. The stage registers its spend (T Gaussians, PLD) when it is constructed: its noise is fixed
by the run's parameters.
"""

from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam

from core.records import ConversationBlock, DeadLetter
from dp_ops.run_budget import RunBudget
from dp_ops.token_decoding import (
    STAGE,
    TokenDecodingParams,
    noisy_mean,
    token_decoding_spend,
    topic_sample,
    user_choice,
)
from transforms.dp_stage import DPStage
from transforms.record_isolation import stage_dead_letter

EVIDENCE = "dp_token_decoded"


@dataclasses.dataclass(frozen=True)
class TokenDecodingOutput:
    """`descriptions`: (cluster id, {"description", "evidence"}) per kept topic; `dead_letter`: failed topics."""

    descriptions: object
    dead_letter: object
    stage: "TokenDecoding"


def _rows(block: ConversationBlock, kept: frozenset):
    """(user id, (conversation id, cluster id, text)) for the block's conversations in kept topics."""
    for conversation, user, cluster, text in zip(block.conversation_ids, block.user_ids,
                                                 block.cluster_ids.tolist(), block.facets):
        if int(cluster) in kept:
            yield user, (conversation, int(cluster), text)


def _choose(user: str, rows, seed: int):
    """The user's one (cluster id, (user id, text)): dp_ops.token_decoding.user_choice."""
    rows = list(rows)
    texts = {(conversation, cluster): text for conversation, cluster, text in rows}
    conversation, cluster = user_choice([(conversation, cluster) for conversation, cluster, _ in rows], seed)
    return cluster, (user, texts[(conversation, cluster)])


class _DecodeTopicFn(beam.DoFn):
    def __init__(self, params: TokenDecodingParams, sigma: float | None, noise_seed: int | None, seed: int,
                 decoder):
        self._params, self._sigma, self._noise_seed, self._seed = params, sigma, noise_seed, seed
        self._decoder = decoder

    def setup(self):
        self._decoder.setup()

    def process(self, element):
        cluster, members = element
        texts = dict(members)
        sample = topic_sample(texts, self._params.sample_size, self._seed)
        try:
            decoded = self._decoder.decode(
                [texts[user] for user in sample],
                lambda step, states: noisy_mean(states, self._params, self._sigma, self._noise_seed, cluster, step),
                self._params.steps)
        except Exception as error:  # one topic's failure leaves the others (record isolation)
            logging.warning("token decoding failed for topic %s: %s", cluster, type(error).__name__)
            yield stage_dead_letter(STAGE, "token_decoding_failed", f"topic:{cluster}", error)
            return
        yield int(cluster), {"description": decoded.text, "evidence": EVIDENCE}


class TokenDecoding(DPStage):
    """Input: assigned ConversationBlocks. Output: TokenDecodingOutput. `kept_ids`: the kept cluster ids (a
    PCollection on Beam, a list in-process). `noise_multiplier` None: the evaluation's exact baseline."""

    def __init__(self, params: TokenDecodingParams, noise_multiplier: float | None, delta: float,
                 budget: RunBudget | None, kept_ids, decoder, seed: int, noise_seed: int | None = None):
        super().__init__(budget)
        self._kept_ids, self._seed, self._params = kept_ids, seed, params
        self.sigma = None if noise_multiplier is None else noise_multiplier * params.l2_sensitivity
        self._fn = _DecodeTopicFn(params, self.sigma, noise_seed, seed, decoder)
        if noise_multiplier is not None:
            self._spends(token_decoding_spend(params, noise_multiplier, delta))

    def local(self, blocks: list[ConversationBlock]) -> TokenDecodingOutput:
        kept = frozenset(int(c) for c in self._kept_ids)
        by_user: dict = {}
        for block in blocks:
            for user, row in _rows(block, kept):
                by_user.setdefault(user, []).append(row)
        by_topic: dict = {cluster: [] for cluster in sorted(kept)}
        for user, rows in by_user.items():
            cluster, member = _choose(user, rows, self._seed)
            by_topic[cluster].append(member)
        self._fn.setup()
        out = [e for item in by_topic.items() for e in self._fn.process(item)]
        return TokenDecodingOutput(dict(e for e in out if not isinstance(e, DeadLetter)),
                                   [e for e in out if isinstance(e, DeadLetter)], self)

    def expand(self, blocks) -> TokenDecodingOutput:
        seed = self._seed
        members = (blocks
                   | "kept rows by user" >> beam.FlatMap(lambda block, kept: _rows(block, frozenset(kept)),
                                                         beam.pvalue.AsList(self._kept_ids))
                   | "group by user" >> beam.GroupByKey()
                   | "one conversation per user" >> beam.Map(lambda pair: _choose(*pair, seed)))
        kept = self._kept_ids | "kept topic markers" >> beam.Map(lambda cluster: (int(cluster), None))
        topics = (({"members": members, "kept": kept}) | "members by topic" >> beam.CoGroupByKey()
                  | "kept topics only" >> beam.Filter(lambda item: len(item[1]["kept"]) > 0)
                  | "topic members" >> beam.MapTuple(lambda cluster, groups: (cluster, list(groups["members"]))))
        mixed = topics | "decode each topic" >> beam.ParDo(self._fn)
        return TokenDecodingOutput(
            mixed | "descriptions" >> beam.Filter(lambda e: not isinstance(e, DeadLetter)),
            mixed | "failed topics" >> beam.Filter(lambda e: isinstance(e, DeadLetter)), self)


@dataclasses.dataclass(frozen=True)
class TokenDecodingPlan:
    """--token_decoding_steps' public settings for transforms/topic_stages.py: the mechanism's parameters, the
    decoder (backends.token_decoder.TokenDecoder, loaded lazily) and the public sampling seed."""

    params: TokenDecodingParams
    decoder: object
    seed: int

    def stage(self, noise_multiplier: float | None, delta: float, budget: RunBudget | None, kept_ids,
              noise_seed: int | None) -> TokenDecoding:
        return TokenDecoding(self.params, noise_multiplier, delta, budget, kept_ids, self.decoder, self.seed, noise_seed)
