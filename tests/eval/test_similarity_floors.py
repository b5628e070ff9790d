"""Each embedding model's cosine floors (config/embedding.py SIMILARITY_FLOORS, the bundled facet file's levels)
are the all-MiniLM-L6-v2 floors carried over by quantile matching (eval/utility/similarity_floors.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from backends.facet_set import load_facet_set
from config.embedding import SIMILARITY_FLOORS, SimilarityFloors, similarity_floors
from eval.utility import similarity_floors as script


def test_a_floor_keeps_the_same_share_of_pairs_under_both_models():
    reference = np.linspace(0.0, 1.0, 1001)  # uniform on [0, 1]
    model = np.sort(np.linspace(0.0, 1.0, 1001) ** 2)  # the same pairs on a squashed scale
    floor, share = script.matched(0.5, reference, model)
    assert share == pytest.approx(0.5, abs=1e-3) and floor == pytest.approx(0.25, abs=2e-3)
    assert (model >= floor).mean() == pytest.approx(share, abs=2e-3)


def test_a_model_without_its_own_row_gets_the_floors_as_tuned():
    assert similarity_floors("some/local-model") == SIMILARITY_FLOORS[script.REFERENCE_MODEL]


@pytest.mark.real_model
def test_the_committed_floors_of_use_multilingual_v3_are_the_carried_over_ones():
    floors, shares, levels = script.carried_floors("use-multilingual-v3")
    committed = SIMILARITY_FLOORS["use-multilingual-v3"]
    for field in dataclasses.fields(SimilarityFloors):  # rounded to 0.01: a re-draw may flip the last digit
        assert getattr(floors, field.name) == pytest.approx(getattr(committed, field.name), abs=0.011), field.name
    concern = next(f for f in load_facet_set().facets if f.name == "concern").for_model("use-multilingual-v3")
    assert levels["concern"] == pytest.approx({a.id: a.threshold for a in concern.answers if a.threshold}, abs=0.011)
    # USE's cosines sit lower than MiniLM's: its vote and theme floors are below 0.3, and keep the same share.
    assert committed.keyword_vote < SIMILARITY_FLOORS[script.REFERENCE_MODEL].keyword_vote
    assert 0 < shares["keyword_vote"] < 0.05
