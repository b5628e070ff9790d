"""The multilingual rule of nearest_description facets (backends/facet_set.py): a text the language
detector does not put among "run_model_languages" is embedded by the facet's multilingual model, against
that model's embeddings of the same descriptions; the bundled request_kind uses USE multilingual v3."""

import dataclasses

import numpy as np
import pytest

from backends import embedding
from backends.facet_set import Answer, FacetClassifier, FacetDeclaration, Multilingual, load_facet_set
from backends.keyword_categories import KeywordCategories
from config.embedding import Encoder
from core.records import ConversationBlock
from tests.support.facet_files import assert_facet_file_refused
from transforms.facet_histograms import AnswerFacetsFn
from transforms.vectors import keyword_vectors

KIND = FacetDeclaration("kind", "What kind?", "nearest_description",
                        (Answer("writing", "Writing", ("write",)),
                         Answer("translation", "Translation", ("translate",), cues=("tradu",)),
                         Answer("math", "Math", ("solve",)), Answer("other", "Other")),
                        other="other", min_similarity=0.5,
                        multilingual=Multilingual("stand-in", 0.9, ("en",)))
AXIS = {"write": 0, "translate": 1, "solve": 2}
# The stand-in multilingual model: a text's vector is given by its first word (math for anything unknown).
WORDS = {"escribe": [1.0, 0.0, 0.0], "traduce": [0.0, 1.0, 0.0], "casi": [0.0, 0.6, 0.8]}


def _run_model(phrases):
    return np.array([np.eye(3)[AXIS[p]] for p in phrases])


def _stand_in():
    def encode(text):
        if text in AXIS:  # the descriptions: the same axes as the run's model
            return np.eye(3)[AXIS[text]]
        return np.array(WORDS.get(text.split()[0].casefold(), [0.0, 0.0, 1.0]))
    return encode


def _classifier(facet=KIND) -> FacetClassifier:
    detect = lambda text: "en" if text.startswith("EN") else "es"  # noqa: E731 - a stand-in detector
    classifier = FacetClassifier(facet, detect=detect, multilingual_models={"stand-in": _stand_in})
    classifier.setup(_run_model, ())
    return classifier


def test_a_non_english_text_is_answered_by_the_multilingual_model_and_an_english_one_by_the_run_model():
    classifier = _classifier()
    near_write = np.array([1.0, 0.0, 0.0])
    # English: the run's embedding decides, exactly as without the rule; the stand-in model is not asked.
    assert classifier.answer("EN escribe", np.array([0.0, 0.0, 1.0])) == "math"
    # Not English: the run's embedding is ignored and the multilingual model's vector decides; without
    # the rule the run's embedding would.
    assert classifier.answer("Escribe un poema", np.array([0.0, 0.0, 1.0])) == "writing"
    without = _classifier(dataclasses.replace(KIND, multilingual=None))
    assert without.answer("Escribe un poema", np.array([0.0, 0.0, 1.0])) == "math"
    assert classifier.answer("Traduce esta carta", near_write) == "translation"  # its cue is in the text
    # That path has its own threshold (0.9): the nearest, "solve" at 0.8, is below it, so "other"; the
    # run's threshold (0.5) would have given math.
    assert classifier.answer("Casi nada", near_write) == "other"


def test_each_text_gets_the_answer_it_gets_alone():
    texts = ["EN write", "Escribe", "Traduce", "Casi", "Resuelve"]
    embeddings = [np.array([1.0, 0.0, 0.0])] * len(texts)
    alone = [_classifier().answer(t, e) for t, e in zip(texts, embeddings)]
    shared = _classifier()
    assert [shared.answer(t, e) for t, e in zip(texts, embeddings)] == alone == [
        "writing", "writing", "translation", "other", "math"]


@pytest.mark.parametrize("multilingual, message", [
    ('{"model": "no-such-model"}', "model"),
    ('{"model": "use-multilingual-v3", "min_similarity": "high"}', "min_similarity"),
    ('{"model": "use-multilingual-v3", "run_model_languages": "en"}', "run_model_languages"),
])
def test_a_bad_multilingual_declaration_is_refused(tmp_path, multilingual, message):
    assert_facet_file_refused(
        tmp_path, '{"facets": [{"name": "k", "question": "?", "classifier": "nearest_description", "other": "o", '
                  f'"multilingual": {multilingual}, "answers": [{{"id": "t", "descriptions": ["x"]}}, {{"id": "o"}}]}}]}}',
        message)


def test_multilingual_is_only_for_nearest_description(tmp_path):
    assert_facet_file_refused(
        tmp_path, '{"facets": [{"name": "l", "question": "?", "classifier": "language", "other": "en", '
                  '"multilingual": {"model": "use-multilingual-v3"}, "answers": [{"id": "en"}]}]}', "nearest_description")


# Requests written for this test from general knowledge of the languages (not from the generator's templates).
REQUESTS = [
    ("Escribe un poema sobre el otoño y las hojas que caen", "writing"),
    ("Mon programme Python plante avec une erreur, peux-tu corriger ce bug ?", "coding"),
    ("Дай мне совет: как помириться с другом после ссоры?", "advice"),
    ("このPythonの関数のバグを直してください", "coding"),
    ("请帮我写一首关于月亮的诗", "writing"),
    ("Übersetze diesen Satz bitte ins Englische: Ich habe Hunger.", "translation"),
]


@pytest.mark.real_model
def test_the_bundled_request_kind_answers_non_english_requests_with_use_and_keeps_english_answers():
    request_kind = load_facet_set().facets[1]
    assert request_kind.multilingual == Multilingual("use-multilingual-v3", 0.19, ("en",))
    model = "all-MiniLM-L6-v2"  # an English run model: the case the switch is for
    encoder = Encoder(model)
    # English: the last two were explanation and analysis with the first five descriptions per answer.
    texts = [text for text, _ in REQUESTS] + ["Write a poem about autumn leaves", "Fix the bug in my Python function",
                                              "I need a 1000-word essay comparing capitalism and socialism for my class",
                                              "Plan a 5-day trip to Lisbon on a budget with things to see each day"]
    vectors = embedding.embed_texts(model, texts)

    def answers(facet):
        answer_fn = AnswerFacetsFn((facet,), (), KeywordCategories({}), encoder)
        answer_fn.setup()
        block = ConversationBlock([str(i) for i in range(len(texts))], [""] * len(texts), np.ones(len(texts)),
                                  texts, vectors, cluster_ids=np.zeros(len(texts), dtype=np.int64))
        return [answer for _, _, answer, _ in answer_fn.process(block)]

    multilingual = answers(request_kind.for_model(model))
    run_model_only = answers(dataclasses.replace(request_kind, multilingual=None).for_model(model))
    assert multilingual[:len(REQUESTS)] == [kind for _, kind in REQUESTS]
    assert sum(a == kind for a, (_, kind) in zip(run_model_only, REQUESTS)) < len(REQUESTS)  # what the rule fixes
    assert multilingual[len(REQUESTS):] == run_model_only[len(REQUESTS):] == [
        "writing", "coding", "writing", "brainstorming"]
    # One block of texts gives each the answer it gets alone (the model embeds one text per call).
    alone = FacetClassifier(request_kind.for_model(model))
    alone.setup(lambda phrases: keyword_vectors(encoder, phrases), ())
    assert [alone.answer(t, v) for t, v in zip(texts[::-1], vectors[::-1])] == multilingual[::-1]


@pytest.mark.real_model
def test_under_the_default_multilingual_encoder_every_text_is_answered_on_the_runs_own_embedding():
    """The run's model is the facet's multilingual model: no switch, one encoder, the multilingual threshold."""
    request_kind = load_facet_set().facets[1]
    model = embedding.DEFAULT_EMBEDDING_MODEL
    assert request_kind.multilingual.model == model
    resolved = request_kind.for_model(model)
    assert resolved.multilingual is None and resolved.min_similarity == request_kind.multilingual.min_similarity
    texts = [text for text, _ in REQUESTS]
    vectors = embedding.embed_texts(model, texts)
    classifier = FacetClassifier(resolved, detect=lambda text: pytest.fail("no language is needed"))
    classifier.setup(lambda phrases: keyword_vectors(Encoder(model), phrases), ())
    assert [classifier.answer(t, v) for t, v in zip(texts, vectors)] == [kind for _, kind in REQUESTS]
