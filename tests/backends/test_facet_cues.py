"""The cue rule of nearest_description facets (backends/facet_set.py): an answer with "cues" holds only
for a text containing one; the bundled request_kind's translation is such an answer."""

import numpy as np

from backends.facet_set import Answer, FacetClassifier, FacetDeclaration, load_facet_set
from synthetic.facets import FACET_TOPICS
from tests.support.facet_files import assert_facet_file_refused

KIND = FacetDeclaration("kind", "What kind?", "nearest_description",
                        (Answer("writing", "Writing", ("write",)), Answer("translation", "Translation", ("translate",),
                                                                          cues=("translat", "tradu")),
                         Answer("other", "Other")), other="other", min_similarity=0.5)
AXIS = {"write": 0, "translate": 1}


def _vectors(phrases):
    return np.array([np.eye(3)[AXIS[p]] for p in phrases])


def _classifier() -> FacetClassifier:
    classifier = FacetClassifier(KIND)
    classifier.setup(_vectors, ())
    return classifier


def test_a_cued_answer_needs_its_cue_else_the_next_nearest_description_decides():
    classifier = _classifier()
    near_translation = np.array([0.6, 0.8, 0.0])  # nearest translate, then write (0.6 >= min_similarity)
    assert classifier.answer("Please translate this letter", near_translation) == "translation"
    assert classifier.answer("Traduce esta carta al inglés", near_translation) == "translation"  # casefolded cue
    assert classifier.answer("Escribe una carta a mi jefe", near_translation) == "writing"
    # No cue, and the next nearest is below min_similarity: "other", never the cued answer.
    assert classifier.answer("Escribe una carta", np.array([0.3, 0.95, 0.0])) == "other"


def test_each_text_gets_the_answer_it_gets_alone():
    texts = ["translate it", "write it", "Traduis-le", "no cue here"]
    embeddings = [np.array([0.6, 0.8, 0.0])] * len(texts)
    alone = [_classifier().answer(t, e) for t, e in zip(texts, embeddings)]
    shared = _classifier()
    assert [shared.answer(t, e) for t, e in zip(texts, embeddings)] == alone == [
        "translation", "writing", "translation", "writing"]


def test_cues_must_be_a_list_of_strings(tmp_path):
    assert_facet_file_refused(
        tmp_path, '{"facets": [{"name": "k", "question": "?", "classifier": "nearest_description", "other": "o", '
                  '"answers": [{"id": "t", "descriptions": ["translate"], "cues": "translate"}, {"id": "o"}]}]}', "cues")


def test_the_bundled_translation_answer_is_cued_and_the_planted_requests_agree_with_its_cues():
    request_kind = load_facet_set().facets[1]
    cues = {a.id: a.cues for a in request_kind.answers if a.cues}
    assert list(cues) == ["translation"]

    def cued(template: str) -> bool:
        return any(cue in template.casefold() for cue in cues["translation"])

    for topic in FACET_TOPICS:
        for language, phrasing in topic.phrasings.items():
            # Planted translation requests ask in words, in every language; no other planted kind does.
            assert all(cued(t) == (topic.request_kind == "translation") for t in phrasing.templates), (
                topic.topic, language)
