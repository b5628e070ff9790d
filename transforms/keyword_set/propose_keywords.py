"""ProposeKeywords: Facets -> (user_id, (keyword, weight)) from a KeywordProposer, for DP selection.

The proposals are private (an LLM may copy anything from a conversation); they leave the pipeline
only through DP partition selection (after NominateTerms keeps a user's L0 heaviest). Each
conversation adds at most `max_keywords` distinct, normalised keywords, the i-th (from 0) with
weight 1 - i / (2 max_keywords): a keyword proposed for two of a user's conversations outweighs any
proposed for one, and among those the conversation's first proposals go first.

Record-isolated like the job's other per-record steps (transforms/record_isolation.py): a
conversation whose proposal raises, or is not a list of keywords, is dead-lettered alone
(`keyword_proposal_failed`), and every other conversation gets the proposals it would get without it.
"""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import KeywordProposer
from backends.keyword_set import MAX_KEYWORD_CHARS
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import timed

BATCH_SIZE = 64
STAGE = "propose_keywords"
REASON = "keyword_proposal_failed"


def normalised_proposals(proposed: list[str], max_keywords: int) -> list[str]:
    cleaned = (" ".join(str(k).lower().split()) for k in proposed)
    distinct = dict.fromkeys(k for k in cleaned if k and len(k) <= MAX_KEYWORD_CHARS)
    return list(distinct)[:max_keywords]


def proposal_weight(rank: int, max_keywords: int) -> float:
    return 1.0 - rank / (2 * max_keywords)


class _ProposeFn(beam.DoFn):
    def __init__(self, proposer: KeywordProposer, max_keywords: int):
        self._proposer = proposer
        self._max_keywords = max_keywords

    def setup(self):
        self._proposer.setup()
        self._timed_propose = timed(STAGE, self._propose)

    def teardown(self):
        self._proposer.teardown()

    def _propose(self, facets):
        return run_isolated(lambda batch: self._proposer.propose([f.text for f in batch], self._max_keywords),
                            list(facets))

    def process(self, facets):
        for facet, (proposed, error) in zip(facets, self._timed_propose(facets)):
            if error is None and not isinstance(proposed, (list, tuple)):
                error = f"the proposer gave {type(proposed).__name__}, not a list of keywords"
            if error is not None:
                yield stage_dead_letter(STAGE, REASON, facet.conversation_id, error)
                continue
            for rank, keyword in enumerate(normalised_proposals(proposed, self._max_keywords)):
                yield facet.user_id, (keyword, proposal_weight(rank, self._max_keywords))


class ProposeKeywords(beam.PTransform):
    """Output: StageOutput of (user_id, (keyword, weight)) pairs and the DeadLetters of conversations
    whose proposal failed."""

    def __init__(self, proposer: KeywordProposer, max_keywords: int):
        super().__init__()
        self._fn = _ProposeFn(proposer, max_keywords)

    def expand(self, facets) -> StageOutput:
        return split_dead_letters(facets
                                  | "batch facets" >> beam.BatchElements(min_batch_size=1, max_batch_size=BATCH_SIZE)
                                  | "propose keywords" >> beam.ParDo(self._fn))
