"""ThemeHistogram: every night, each fixed public theme's size as one user-level DP histogram
(dp_ops/theme_histogram.py): the bounded, embedded conversations -> report.json's `themes` section.

Each conversation gets its theme by a public rule (its nearest keywords' category, one conversation at
a time; a conversation whose embedding is unusable is dead-lettered alone); each user's themes become
its votes, scaled to L2 norm 1 (dp_ops.theme_histogram.user_theme_votes); DPKeywordVotes' release of
weighted votes sums them over the fixed partition with Gaussian noise (one "cluster"), and the
section states each theme's noisy size, 95% interval and share. Independent of the clustering: the
same partition every night, whatever the topics are.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from backends.keyword_categories import KeywordCategories
from config.embedding import Encoder
from core.blas_threads import one_blas_thread
from core.records import ConversationBlock, DeadLetter
from dp_ops.run_budget import RunBudget
from dp_ops.theme_histogram import (
    ThemeRule,
    nearest_theme,
    theme_columns,
    theme_partition,
    themes_section,
    user_theme_votes,
)
from transforms.dp_votes import DPKeywordVotes
from transforms.record_isolation import StageOutput, split_dead_letters, stage_dead_letter
from transforms.vectors import keyword_vectors

THEMES_CLUSTER = 0  # the themes are one "cluster" of DPKeywordVotes' (cluster, column) release


@dataclasses.dataclass(frozen=True)
class ThemeOutput:
    """`section`: report.json's themes section (a singleton on Beam); `dead_letter`: conversations
    without a usable embedding; `stage`: the DP stage, registered with the budget."""

    section: object
    dead_letter: object
    stage: DPKeywordVotes


def _user_votes(user: tuple) -> list[tuple[int, str, float]]:
    """(user id, its conversations' themes) -> its (THEMES_CLUSTER, theme, vote) votes."""
    return [(THEMES_CLUSTER, theme, vote) for theme, vote in user_theme_votes(list(user[1]))]


class _ConversationThemeFn(beam.DoFn):
    """A conversation -> (its user id, its theme), or a dead letter for an unusable embedding."""

    def __init__(self, keywords: tuple[str, ...], categories: KeywordCategories, encoder: Encoder):
        self._keywords, self._categories, self._encoder = keywords, categories, encoder
        self.columns = theme_columns(categories.names)

    def setup(self):
        self._categories.setup()
        self._rule = ThemeRule.of(keyword_vectors(self._encoder, self._keywords), self._keywords,
                                  self._categories.category_of, self.columns[:-1],
                                  min_similarity=self._encoder.floors.theme)

    def process(self, block: ConversationBlock):
        with one_blas_thread():
            themes = [self._theme(embedding) for embedding in block.embeddings]
        for conversation_id, user_id, theme in zip(block.conversation_ids, block.user_ids, themes):
            if isinstance(theme, ValueError):
                yield stage_dead_letter("themes", "theme_assignment_failed", conversation_id, theme)
            else:
                yield user_id, theme

    def _theme(self, embedding) -> str | ValueError:
        try:
            return self.columns[nearest_theme(embedding, self._rule)]
        except ValueError as error:
            return error


class ThemeHistogram(beam.PTransform):
    """Input: bounded, embedded ConversationBlocks. Output: ThemeOutput. `encoder`: the run's (the keywords'
    vectors). `noise_multiplier` None: the evaluation's exact baseline."""

    def __init__(self, keywords: tuple[str, ...], categories: KeywordCategories, encoder: Encoder,
                 noise_multiplier: float | None, delta: float, budget: RunBudget | None,
                 noise_seed: int | None = None):
        super().__init__()
        self._fn = _ConversationThemeFn(tuple(keywords), categories, encoder)
        self._sensitive = categories.sensitive
        partition = theme_partition(self._fn.columns)
        self._release = DPKeywordVotes(1, self._fn.columns, noise_multiplier, delta, [THEMES_CLUSTER], budget,
                                       noise_seed, spend_of=partition.spend, noise_stream=partition.noise_stream)

    def _section(self, release) -> dict:
        values = dict(release)
        noisy = {column: values[(THEMES_CLUSTER, column)] for column in self._fn.columns}
        return themes_section(noisy, self._release.sigma, self._sensitive)

    def local(self, blocks: list[ConversationBlock]) -> ThemeOutput:
        """In-process: the same DoFn and release on plain values."""
        self._fn.setup()
        mixed = [element for block in blocks for element in self._fn.process(block)]
        by_user: dict[str, list[str]] = {}
        for user_id, theme in (e for e in mixed if not isinstance(e, DeadLetter)):
            by_user.setdefault(user_id, []).append(theme)
        release = self._release.local([vote for user in by_user.items() for vote in _user_votes(user)])
        return ThemeOutput(self._section(release), [e for e in mixed if isinstance(e, DeadLetter)],
                           self._release)

    def expand(self, blocks) -> ThemeOutput:
        themes: StageOutput = split_dead_letters(blocks | "nearest theme per conversation" >> beam.ParDo(self._fn))
        release = (themes.output | "themes per user" >> beam.GroupByKey()
                   | "user votes, L2 norm 1" >> beam.FlatMap(_user_votes)
                   | "DP theme histogram" >> self._release)
        section = (release | "one release" >> beam.combiners.ToList()
                   | "themes section" >> beam.Map(self._section))
        return ThemeOutput(section, themes.dead_letter, self._release)
