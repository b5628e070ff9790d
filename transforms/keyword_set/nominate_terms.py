"""NominateTerms: (user_id, (term, weight)) -> (user_id, term), each user's L0 heaviest terms once.

The contribution bound of DP partition selection (dp_ops.partition_selection.top_terms_per_user):
a user nominates each term at most once and at most `max_terms_per_user` terms, those with the
largest total weight over their conversations. Private: the nominations leave the pipeline only
through partition selection.
"""

from __future__ import annotations

import apache_beam as beam

from dp_ops.partition_selection import top_terms_per_user


def _nominated(user_and_weighted_terms, max_terms: int):
    user_id, weighted_terms = user_and_weighted_terms
    for term in top_terms_per_user(weighted_terms, max_terms):
        yield user_id, term


class NominateTerms(beam.PTransform):
    def __init__(self, max_terms_per_user: int):
        super().__init__()
        self._max_terms = max_terms_per_user

    def expand(self, weighted_pairs):
        return (weighted_pairs
                | "group by user" >> beam.GroupByKey()
                | "each user's heaviest terms" >> beam.FlatMap(_nominated, self._max_terms))
