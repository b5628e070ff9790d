"""--centre_decoder (issue 41, item 1): each released topic's DP centre decoded into a name and a
one-sentence description by search (backends/centre_decoder.py, transforms/decode_centres.py): the
nearest candidate is kept, variations improve on the first draft or leave it, no epsilon is added, a
sensitive category still needs the topic's votes, a topic whose search fails keeps its name alone,
and both engines give the same topics."""

import dataclasses
import json
import os
import re

import apache_beam as beam
import numpy as np
import pytest

from backends.centre_decoder import (
    NAME_EVIDENCE,
    SENSITIVE_REFUSAL,
    SENSITIVE_WORD_REFUSAL,
    UNVERIFIED_NOTE,
    Candidate,
    Composition,
    NameBank,
    SensitiveGate,
    TemplateLabelWriter,
    WithBank,
    compose_name,
    decode_centre,
    decoded_topic,
    label_text,
    labels_name,
    load_bank,
    split_label,
)
from backends.embedding import DEFAULT_EMBEDDING_MODEL, embed_texts
from backends.exemplars import evolve_exemplars
from backends.interfaces import ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.label_evidence import UNVERIFIED, unverified_text, voted_categories
from backends.llm import prompts
from backends.offline import KeywordClusterNamer
from config.embedding import Encoder
from config.exemplars import ExemplarParams
from core.label_sources import CENTROID_SOURCE, HISTOGRAM_SOURCE
from tests.conftest import assert_together, local_pipeline
from tests.transforms.test_engines import EMBEDDING, beam_release_inputs
from transforms.decode_centres import DecodeCentres, DecoderSettings
from transforms.dp_cluster_sizes import KeptClusters
from transforms.dp_kmeans import DPKMeansOutput
from transforms.engine import BeamEngine, LocalEngine
from transforms.topic_keywords import PublicKeywords
from transforms.topic_release import ReleaseSettings, release_topics

MODEL = DEFAULT_EMBEDDING_MODEL
ENCODER = Encoder(MODEL)
TOPIC = {"name": "Cooking: sourdough", "description": "Requests about cooking.", "keywords": ["sourdough", "baking"],
         "label_source": HISTOGRAM_SOURCE, "label_evidence": "dp_votes"}
SENSITIVE = frozenset({"Violence and weapons"})


def _label(angle: float, words: str = "name") -> str:
    return label_text(f"a{angle:g} {words}", f"Requests at {angle:g} degrees.")


def _angle_points(texts):
    angles = np.radians([float(re.match(r"a([-0-9.]+)", t).group(1)) for t in texts])
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


class _AngleWriter(ExemplarWriter):
    """Labels at an angle (degrees) from the centre's direction in 2-d; `better`: varying a label at x
    writes x/2 and x/3 (nearer the centre), else 80 + x and 85 + x (farther)."""

    def __init__(self, first, better=True):
        self.first, self.better, self.varied = first, better, []

    def write(self, topic, count):
        return [_label(a) for a in self.first][:count]

    def vary(self, topic, winners, count):
        self.varied.append(list(winners))
        out = []
        for winner in winners:
            angle = float(re.match(r"a([-0-9.]+)", winner).group(1))
            out += [_label(angle / 2, "varied"), _label(angle / 3, "varied")] if self.better else \
                [_label(80 + angle, "worse"), _label(85 + angle, "worse")]
        return out[:count]


def test_labels_are_one_text_and_split_back_into_a_name_and_a_description():
    text = label_text("Sourdough  baking \u2014 help", "Users ask how to bake sourdough bread.")
    assert text == "Sourdough baking , help \u2014 Users ask how to bake sourdough bread."
    assert split_label(text) == ("Sourdough baking , help", "Users ask how to bake sourdough bread.")
    assert split_label("no separator here") is None and split_label(label_text("", "x.")) is None


def test_the_search_keeps_the_candidate_nearest_the_centre():
    decoded = decode_centre(_AngleWriter([50, 20, 70, 35]), TOPIC, np.array([2.0, 0.0]), _angle_points, None,
                            drafts=4, rounds=0)
    assert decoded.name == "a20 name" and decoded.description == "Requests at 20 degrees."
    assert decoded.similarity == pytest.approx(np.cos(np.radians(20)), abs=1e-6) and decoded.round == 0
    assert decoded.candidates_scored == 4


@pytest.mark.parametrize("better", [True, False])
def test_variations_improve_on_the_first_draft_or_leave_it(better):
    writer = _AngleWriter([50, 20, 70, 35], better=better)
    decoded = decode_centre(writer, TOPIC, np.array([1.0, 0.0]), _angle_points, None, drafts=4, rounds=2,
                            composition=Composition(first_draft=True))
    assert writer.varied  # the best of the draft was varied
    assert decoded.similarity >= decoded.first_draft_similarity
    if better:  # round 1 varies 20, 35, 50 -> 10 and 6.67 (first two: 2 variations a round); round 2 goes on
        assert decoded.round >= 1 and decoded.similarity > decoded.first_draft_similarity
        assert decoded.name.endswith("varied")
    else:
        assert decoded.round == 0 and decoded.name == "a20 name"
        assert decoded.similarity == decoded.first_draft_similarity


# Three facets in 2-d: a text's point is the normalised sum of the facets whose word it holds.
FACETS = {"alpha": (1.0, 0.0), "beta": (0.0, 1.0), "gamma": (-1.0, 0.0)}


def _facet_points(texts):
    rows = [np.sum([FACETS[w] for w in FACETS if w in t.casefold()] or [(0.0, 0.0)], axis=0) for t in texts]
    return np.stack([r / (np.linalg.norm(r) or 1.0) for r in rows]).astype(np.float32)


def _facets(*names):
    return [Candidate(n, f"Requests about {n.casefold()}.", 0) for n in names]


def test_a_name_joins_the_candidates_that_together_sit_nearest_the_centre():
    between = np.array([1.0, 1.0]) / np.sqrt(2)  # a centre between two facets: the mean of a mixed cluster
    names, similarity = compose_name(_facets("Gamma", "Alpha", "Beta"), between, _facet_points, None)
    # Alpha alone is 45 degrees off; with Beta it is on the centre; Gamma would pull it away, so it stops.
    assert [c.name for c in names] == ["Alpha", "Beta"] and similarity == pytest.approx(1.0)
    assert [c.name for c in compose_name(_facets("Alpha", "Beta"), between, _facet_points, None, parts=1)[0]] == ["Alpha"]
    # A name nearer the centre on its own is not joined with another.
    assert [c.name for c in compose_name(_facets("Alpha beta", "Gamma", "Beta"), between, _facet_points, None)[0]] == [
        "Alpha beta"]
    # A joined name is released as one label (its first part's description) and must pass the gate as one;
    # nor may it pass MAX_NAME_WORDS words.
    refused = []

    def refuse(texts):
        refused.extend(texts)
        return ["together" if "Beta" in t else None for t in texts]
    assert [c.name for c in compose_name(_facets("Alpha", "Beta"), between, _facet_points, refuse)[0]] == ["Alpha"]
    assert refused == [label_text("Alpha and Beta", "Requests about alpha.")]
    long = _facets("Alpha one two three four five six", "Beta one two three")
    assert len(compose_name(long, between, _facet_points, None)[0]) == 1
    assert compose_name([], between, _facet_points, None) is None


def test_the_decoded_name_joins_the_searched_candidates_names_with_the_first_ones_description():
    writer = _AngleWriter([])
    writer.write = lambda topic, count: [label_text("Gamma", "Requests about gamma."),
                                         label_text("Alpha", "Requests about alpha."),
                                         label_text("Beta", "Requests about beta.")]
    decoded = decode_centre(writer, {**TOPIC, "keywords": []}, np.array([2.0, 2.0]), _facet_points, None, rounds=0,
                            composition=Composition(first_draft=True))
    assert (decoded.name, decoded.description) in {("Alpha and Beta", "Requests about alpha."),
                                                   ("Beta and Alpha", "Requests about beta.")}
    assert decoded.similarity == pytest.approx(1.0) == decoded.first_draft_similarity and decoded.round == 0
    single = decode_centre(writer, {**TOPIC, "keywords": []}, np.array([2.0, 2.0]), _facet_points, None, rounds=0,
                           composition=Composition(parts=1))
    assert single.similarity == pytest.approx(np.cos(np.radians(45)), abs=1e-6)


def test_an_unverified_topic_without_the_gate_and_a_writer_with_nothing_to_say_get_no_decoded_name():
    # Without the sensitive gate an unverified topic is not searched (nothing would refuse its guess).
    writer = _AngleWriter([10, 20])
    assert decode_centre(writer, {**TOPIC, "label_evidence": "unverified"}, np.array([1.0, 0.0]), _angle_points,
                         None) is None
    assert decode_centre(_AngleWriter([]), TOPIC, np.array([1.0, 0.0]), _angle_points, None) is None


def _gate(sensitive_words=("weapon",)):
    def categories_of(texts):
        return ["Violence and weapons" if any(w in t for w in sensitive_words) else "Food and cooking" for t in texts]
    return SensitiveGate(categories_of, {"sourdough": "Food and cooking", "gun": "Violence and weapons"}, SENSITIVE)


def test_a_decoded_name_in_a_sensitive_category_needs_the_topics_votes():
    writer = _AngleWriter([5, 30])
    writer.write = lambda topic, count: [label_text("a5 weapon smuggling", "Requests about weapons."), _label(30)]
    centre = np.array([1.0, 0.0])
    # Voted for cooking only: the nearer, sensitive candidate is refused before scoring (never varied).
    decoded = decode_centre(writer, TOPIC, centre, _angle_points, _gate(), drafts=2, rounds=1)
    assert decoded.name.startswith(("a30", "a15", "a10")) and "weapon" not in decoded.name
    assert decoded.dropped == {SENSITIVE_REFUSAL: 1}
    assert all("weapon" not in w for winners in writer.varied for w in winners)
    # A centre guess (no votes) is refused it too; the topic's own DP category votes for it allow it.
    approximate = {**TOPIC, "label_source": CENTROID_SOURCE, "label_evidence": "approximate"}
    assert "weapon" not in decode_centre(writer, approximate, centre, _angle_points, _gate(), rounds=0).name
    voted = {**TOPIC, "label_evidence": "dp_category_votes", "voted_category": "Violence and weapons",
             "keywords": ["gun"]}
    assert decode_centre(writer, voted, centre, _angle_points, _gate(), rounds=0).name == "a5 weapon smuggling"
    # Keywords from its own votes support their categories; the same keywords as a centre guess do not.
    category_of = {"gun": "Violence and weapons"}
    assert voted_categories({"label_evidence": "dp_votes", "keywords": ["gun"]}, category_of) == SENSITIVE
    assert voted_categories({"label_evidence": "approximate", "keywords": ["gun"]}, category_of) == frozenset()


# An unverified topic as backends/label_evidence.labelled_topic releases it: its centre's nearest keywords lie
# mostly in a sensitive category; it shows only the others and is named by their category.
UNVERIFIED_TOPIC = {"name": unverified_text("Food and cooking")[0], "description": unverified_text("Food and cooking")[1],
                    "keywords": ["sourdough"], "label_source": CENTROID_SOURCE, "label_evidence": UNVERIFIED}


def test_an_unverified_topic_gets_a_non_sensitive_decoded_name_and_stays_unverified():
    from transforms.topic_hierarchy import KIND_UNVERIFIED, category_groups
    writer = _AngleWriter([3, 8, 30])
    # Nearest first: a label of a sensitive category, then one of a non-sensitive category by the nearest-
    # keywords rule that still holds a sensitive keyword ("gun"), then a clean one.
    writer.write = lambda topic, count: [label_text("a3 weapon smuggling", "Requests about weapons."),
                                         label_text("a8 gun range days", "Requests at 8 degrees."), _label(30)]
    centre = np.array([1.0, 0.0])
    decoded = decode_centre(writer, UNVERIFIED_TOPIC, centre, _angle_points, _gate(), drafts=3, rounds=1)
    assert decoded is not None and decoded.dropped == {SENSITIVE_REFUSAL: 1, SENSITIVE_WORD_REFUSAL: 1}
    # Round 1 varied the clean label only (30 -> 15; one variation a round for 3 drafts): the refused ones
    # were never scored or varied.
    assert writer.varied == [[_label(30)]] and decoded.name == "a15 varied" and decoded.candidates_scored == 2
    topic = decoded_topic(UNVERIFIED_TOPIC, decoded)
    assert topic["name_from_labels"] == "Food and cooking (approximate)" and topic["name_evidence"] == NAME_EVIDENCE
    assert topic["description"] == "Requests at 15 degrees." + UNVERIFIED_NOTE
    # Its evidence is unchanged: still unverified, in the unverified group, with no exemplars.
    assert {k: topic[k] for k in ("keywords", "label_source", "label_evidence")} == {
        k: UNVERIFIED_TOPIC[k] for k in ("keywords", "label_source", "label_evidence")}
    category_of = {"sourdough": "Food and cooking", "gun": "Violence and weapons"}
    assert category_groups([{**topic, "id": 4}], category_of) == [(KIND_UNVERIFIED, None, [{**topic, "id": 4}])]
    exemplars = evolve_exemplars(_AngleWriter([10, 20]), topic, centre, _angle_points, 2, 2, 0)
    assert exemplars.exemplars == [] and exemplars.candidates_scored == 0
    # No acceptable candidate: no decoded name, the topic keeps its fixed one.
    only_sensitive = _AngleWriter([])
    only_sensitive.write = lambda topic, count: [label_text("a3 weapon smuggling", "Requests about weapons."),
                                                 label_text("a8 Guns", "Requests about violence.")]
    assert decode_centre(only_sensitive, UNVERIFIED_TOPIC, centre, _angle_points, _gate(), rounds=1) is None


def test_the_gate_refuses_sensitive_keywords_and_category_words_of_the_bundled_set():
    keyword_set = load_keyword_set()
    gate = SensitiveGate(lambda texts: [None] * len(texts), keyword_set.category_of(), keyword_set.sensitive_categories)
    refuse = gate.refuse_for(UNVERIFIED_TOPIC)
    refused = ["Gun laws", "Drugs — x", "Sexual content", "Fraud detection", "Hate speech moderation",
               "Jailbreak prompts", "Money-laundering rules", "Web help — Users ask about phishing."]
    kept = ["Content marketing", "AI ethics", "Web development", "Pest control and home security", "Python coding"]
    assert refuse(refused) == [SENSITIVE_WORD_REFUSAL] * len(refused)
    assert refuse(kept) == [None] * len(kept)
    # The word rule holds for every topic, not the unverified ones alone (review finding 5).
    assert gate.refuse_for(TOPIC)(refused) == [SENSITIVE_WORD_REFUSAL] * len(refused)
    assert gate.refuse_for(TOPIC)(kept) == [None] * len(kept)


# A topic whose own DP votes name "Mental health", a non-sensitive category beside "Self-harm and crisis".
MENTAL_HEALTH = {"name": "Mental health: stress", "description": "d.", "keywords": ["stress", "anxiety"],
                 "label_source": HISTOGRAM_SOURCE, "label_evidence": "dp_category_votes",
                 "voted_category": "Mental health"}


def test_a_verified_topics_name_holds_no_word_of_a_sensitive_category_its_votes_do_not_support():
    """Review finding 5: the word rule applies to every topic, for each sensitive category its own votes do
    not support; the categories they support may be named."""
    keyword_set = load_keyword_set()
    gate = SensitiveGate(lambda texts: [None] * len(texts), keyword_set.category_of(), keyword_set.sensitive_categories)
    suicidal = label_text("Stress and suicidal thoughts", "Users ask how to cope with stress.")
    stress = label_text("Stress management", "Users ask how to cope with stress.")
    assert gate.refuse_for(MENTAL_HEALTH)([suicidal, stress]) == [SENSITIVE_WORD_REFUSAL, None]
    # The topic's own votes for the self-harm category let it be named, and only it.
    crisis = {**MENTAL_HEALTH, "voted_category": "Self-harm and crisis"}
    assert gate.refuse_for(crisis)([suicidal, label_text("Gun laws", "Users ask about guns.")]) == [
        None, SENSITIVE_WORD_REFUSAL]
    # A word two sensitive categories share is allowed by votes for either.
    two = SensitiveGate(lambda texts: [None] * len(texts), {"gun": "Violence and weapons", "slurs": "Hate and violence"},
                        frozenset({"Violence and weapons", "Hate and violence"}))
    voted = {**MENTAL_HEALTH, "voted_category": "Violence and weapons"}
    assert two.refuse_for(voted)(["Violence at school", "Gun safety", "Slurs online"]) == [
        None, None, SENSITIVE_WORD_REFUSAL]
    assert two.refuse_for(MENTAL_HEALTH)(["Violence at school"]) == [SENSITIVE_WORD_REFUSAL]
    # In the search: the nearer candidate is refused before it is scored, so the name is the clean one.
    writer = _AngleWriter([])
    writer.write = lambda topic, count: [label_text("a3 Stress and suicidal thoughts", "Users ask about stress."),
                                         label_text("a20 Stress management", "Users ask about stress.")]
    gate = SensitiveGate(lambda texts: ["Mental health"] * len(texts), keyword_set.category_of(),
                         keyword_set.sensitive_categories)
    decoded = decode_centre(writer, MENTAL_HEALTH, np.array([1.0, 0.0]), _angle_points, gate, drafts=2, rounds=0)
    assert decoded.name == "a20 Stress management" and decoded.dropped == {SENSITIVE_WORD_REFUSAL: 1}


def test_the_bank_offers_a_sensitive_categorys_labels_only_to_topics_that_voted_for_it():
    bank = NameBank((("Food and cooking", _label(10)), ("Violence and weapons", _label(3, "weapon")), (None, _label(40))))
    assert bank.offered(frozenset(), SENSITIVE) == [_label(10), _label(40)]
    assert bank.offered(SENSITIVE, SENSITIVE) == [label for _, label in bank.labels]
    gate = _gate()
    writer = WithBank(_AngleWriter([60]), lambda topic: bank.offered(gate.supported(topic), SENSITIVE))
    decoded = decode_centre(writer, TOPIC, np.array([1.0, 0.0]), _angle_points, gate, drafts=1, rounds=0)
    assert decoded.name == "a10 name" and decoded.candidates_scored == 3


def test_the_bundled_bank_is_public_labels_of_the_keyword_sets_categories():
    bank = load_bank()
    categories = set(load_keyword_set().category_of().values())
    assert len(bank.labels) >= 200 and {c for c, _ in bank.labels} <= categories
    assert all(split_label(text) is not None for _, text in bank.labels)


def test_decoded_topics_keep_their_labels_name_and_the_share_note():
    decoded = decode_centre(_AngleWriter([20]), TOPIC, np.array([1.0, 0.0]), _angle_points, None, rounds=0)
    share = {"category": "Violence and weapons", "share": 0.3, "low": 0.1, "high": 0.5}
    topic = decoded_topic({**TOPIC, "sensitive_share": share}, decoded)
    assert topic["name"] == "a20 name" and topic["name_from_labels"] == TOPIC["name"]
    assert topic["name_evidence"] == NAME_EVIDENCE and topic["centre_similarity"] == round(decoded.similarity, 4)
    assert topic["description"].startswith("Requests at 20 degrees.") and "sensitive" in topic["description"]
    assert topic["label_evidence"] == "dp_votes" and topic["keywords"] == TOPIC["keywords"]


def test_the_readability_gate_refuses_unreadable_candidates_before_scoring_and_unreadable_joins():
    writer = _AngleWriter([])
    writer.write = lambda topic, count: [label_text("a5 what is this?", "Requests at 5 degrees."), _label(20), _label(40)]

    def readable(name):
        return "question" if "?" in name else None
    decoded = decode_centre(writer, TOPIC, np.array([1.0, 0.0]), _angle_points, None, rounds=0,
                            composition=Composition(readable=readable))
    # The question sat nearest the centre (5 degrees) but was refused, and counted, before it was scored.
    assert decoded.name == "a20 name" and decoded.dropped == {"unreadable_question": 1}
    assert decoded.candidates_scored == 2
    # A join the gate refuses is not made: its parts alone are readable, together they are not.
    facets = _AngleWriter([])
    facets.write = lambda topic, count: [label_text(n, f"Requests about {n.casefold()}.") for n in ("Alpha", "Beta")]
    both = decode_centre(facets, {**TOPIC, "keywords": []}, np.array([2.0, 2.0]), _facet_points, None, rounds=0)
    assert both.name in ("Alpha and Beta", "Beta and Alpha")
    alone = decode_centre(facets, {**TOPIC, "keywords": []}, np.array([2.0, 2.0]), _facet_points, None, rounds=0,
                          composition=Composition(readable=lambda n: "far_apart_parts" if " and " in n else None))
    assert alone.name in ("Alpha", "Beta")


def test_production_does_not_compose_the_round_0_name():
    def decoded_with(first_draft):
        embedded = []

        def points(texts):
            embedded.extend(texts)
            return _angle_points(texts)
        decoded = decode_centre(_AngleWriter([50, 20, 70, 35]), TOPIC, np.array([1.0, 0.0]), points, None, drafts=4,
                                rounds=2, composition=Composition(first_draft=first_draft))
        return decoded, embedded

    production, embedded = decoded_with(False)
    evaluation, embedded_for_evaluation = decoded_with(True)
    assert production.first_draft_similarity is None and evaluation.first_draft_similarity is not None
    assert (production.name, production.similarity) == (evaluation.name, evaluation.similarity)
    assert len(embedded) < len(embedded_for_evaluation)  # round 0's names are not embedded and joined again


def test_a_decoded_name_replaces_the_labels_name_only_when_it_is_nearer_the_centre():
    assert labels_name({"name": "Cooking: sourdough (approximate)"}) == "Cooking: sourdough"
    assert labels_name({"name": "Mixed: sourdough, sql"}) == "sourdough, sql"
    assert labels_name({"name": "Unlabelled topic"}) is None and labels_name({}) is None
    decoded = decode_centre(_AngleWriter([20]), TOPIC, np.array([1.0, 0.0]), _angle_points, None, rounds=0)
    assert decoded.replaces_labels  # the labels' name not measured (or none): the decoded one
    nearer = np.cos(np.radians(10))
    assert not dataclasses.replace(decoded, labels_similarity=nearer).replaces_labels
    assert dataclasses.replace(decoded, labels_similarity=np.cos(np.radians(30))).replaces_labels
    assert not dataclasses.replace(decoded, labels_similarity=decoded.similarity).replaces_labels


def test_template_writer_uses_the_released_labels_only():
    writer = TemplateLabelWriter()
    drafted = writer.write({**TOPIC, "name": "Cooking: sourdough (approximate)"}, 20)
    assert drafted and all(split_label(text) is not None for text in drafted)
    assert all("approximate" not in text for text in drafted)
    words = {w.casefold() for t in drafted for w in re.findall(r"[A-Za-z]+", t)}
    template_words = {"requests", "about", "often", "with", "in", "especially", "and"}
    assert words <= {"cooking", "sourdough", "baking"} | template_words
    varied = writer.vary(TOPIC, [label_text("Sourdough", "Requests about sourdough.")], 4)
    assert varied == [label_text("Sourdough", "Requests about sourdough, especially baking.")]


# ---- on the real embedding model and keyword set: the transform and both engines ----

class _FailsFor(ExemplarWriter):
    """The template writer, except that it raises for a topic holding `keyword`."""

    def __init__(self, keyword):
        self.keyword, self.inner = keyword, TemplateLabelWriter()

    def write(self, topic, count):
        if self.keyword in topic["keywords"]:
            raise RuntimeError("the writer broke on this topic")
        return self.inner.write(topic, count)

    def vary(self, topic, winners, count):
        return self.inner.vary(topic, winners, count)


def _release_inputs():
    """Four topics labelled by their own votes for keywords of the bundled set, each centred on its
    keywords' embedding."""
    keyword_set = load_keyword_set(None)
    picks = {0: ["sourdough", "baking"], 1: ["sql", "database"], 2: ["hiking", "camping"], 3: ["resume", "interview"]}
    picks = {c: [k for k in ks if k in keyword_set.keywords] or [keyword_set.keywords[5 * c]] for c, ks in picks.items()}
    labels = {c: (ks, HISTOGRAM_SOURCE, None) for c, ks in picks.items()}
    centres = embed_texts(MODEL, [" ".join(ks) for _, ks in sorted(picks.items())])
    sizes = {0: 40.2, 1: 30.0, 2: 22.9, 3: 12.7}
    categories = KeywordCategories.of_keyword_set(keyword_set, ENCODER)
    return keyword_set.keywords, labels, centres, sizes, categories


def _bank():
    return NameBank(tuple((None, label_text(name, description)) for name, description in (
        ("Bread baking at home", "Users ask how to bake bread and sourdough at home."),
        ("SQL query help", "Users ask how to write and fix SQL queries for their database."),
        ("Outdoor trip planning", "Users ask how to plan hiking and camping trips."))))


@pytest.mark.e2e
def test_a_topic_whose_decoding_fails_keeps_its_name_and_no_other_topic_changes():
    keywords, labels, centres, sizes, categories = _release_inputs()
    named = {c: {"name": f"Topic {c}", "description": "d.", "keywords": ks, "label_source": HISTOGRAM_SOURCE,
                 "label_evidence": "dp_votes"} for c, (ks, _, _) in labels.items()}
    kmeans = DPKMeansOutput(centres, None, None, centres.shape[1])

    def decode(writer):
        stage = DecodeCentres(DecoderSettings(writer, _bank(), first_draft=True), ENCODER, keywords, categories,
                              kmeans.centres, kmeans.basis, kmeans.active_dim)
        engine = LocalEngine()
        return engine.apply("decode", stage, named), engine.private["centre_decodings"]

    whole, decodings = decode(TemplateLabelWriter())
    broken, broken_decodings = decode(_FailsFor(labels[1][0][0]))
    assert all(t["name_evidence"] == NAME_EVIDENCE for t in whole.values())
    # The nearest of every candidate, the bank's included (no projection here: cosines in the model's space).
    bank_points = embed_texts(MODEL, [text for _, text in _bank().labels])
    for c, decoding in decodings.items():
        unit = centres[c] / np.linalg.norm(centres[c])
        assert decoding.similarity >= float(np.max(bank_points @ unit)) - 1e-6
    assert broken[1] == named[1] and broken_decodings[1] is None
    assert {c: t for c, t in broken.items() if c != 1} == {c: t for c, t in whole.items() if c != 1}
    assert all(d.similarity >= d.first_draft_similarity for d in decodings.values())


def test_an_unverified_topic_is_decoded_by_the_stage_from_non_sensitive_candidates_only():
    """On the real model and keyword set: an unverified topic whose centre is a sensitive request gets the
    nearest non-sensitive label, even where the bank holds a nearer label of that sensitive category."""
    keywords, labels, centres, sizes, categories = _release_inputs()
    categories.setup()
    guess = embed_texts(MODEL, ["where to buy guns and ammunition for shooting someone"])
    centres = np.concatenate([centres, guess])
    named = {c: {"name": f"Topic {c}", "description": "d.", "keywords": ks, "label_source": HISTOGRAM_SOURCE,
                 "label_evidence": "dp_votes"} for c, (ks, _, _) in labels.items()}
    name, description = unverified_text("Travel")
    named[4] = {"name": name, "description": description, "keywords": ["hiking"], "label_source": CENTROID_SOURCE,
                "label_evidence": UNVERIFIED}
    bank = NameBank(_bank().labels + (
        ("Violence and weapons", label_text("Buying guns", "Users ask where to buy guns and ammunition.")),
        (None, label_text("Shooting questions", "Users ask about shooting someone with a gun."))))
    kmeans = DPKMeansOutput(centres, None, None, centres.shape[1])
    stage = DecodeCentres(DecoderSettings(TemplateLabelWriter(), bank), ENCODER, keywords, categories,
                          kmeans.centres, kmeans.basis, kmeans.active_dim)
    engine = LocalEngine()
    topics = engine.apply("decode", stage, named)
    decoding = engine.private["centre_decodings"][4]
    topic = topics[4]
    assert decoding is not None and topic["name_evidence"] == NAME_EVIDENCE and topic["name_from_labels"] == name
    assert decoding.dropped  # the sensitive bank label and the one holding sensitive words were refused
    assert topic["label_evidence"] == UNVERIFIED and topic["keywords"] == ["hiking"]
    gate = SensitiveGate(stage._fn._categories_of, categories.category_of, categories.sensitive)
    label = label_text(topic["name"], decoding.description)
    assert gate.refuse_for(topic)([label]) == [None]
    assert not any(w in label.casefold() for w in ("gun", "ammunition", "shooting", "weapon", "violence"))


class _Writes(ExemplarWriter):
    """Writes the same labels for every topic, and no variation."""

    def __init__(self, *labels):
        self.labels = [label_text(name, f"Users ask about {name.casefold()}.") for name in labels]

    def write(self, topic, count):
        return list(self.labels)

    def vary(self, topic, winners, count):
        return []


@pytest.mark.e2e
def test_the_stage_keeps_a_labels_name_nearer_the_centre_and_replaces_a_mixed_one_that_is_not():
    keywords, labels, centres, sizes, categories = _release_inputs()
    centres = embed_texts(MODEL, ["How do I write a SQL query that joins two tables?",
                                  "Plan a weekend hiking and camping trip in the mountains"])
    named = {0: {"name": "SQL queries", "description": "d.", "keywords": ["sql"], "label_source": HISTOGRAM_SOURCE,
                 "label_evidence": "dp_votes"},
             1: {"name": "Mixed: sql, hiking", "description": "d.", "keywords": ["sql", "hiking"],
                 "label_source": HISTOGRAM_SOURCE, "label_evidence": "dp_votes"}}
    stage = DecodeCentres(DecoderSettings(_Writes("Outdoor trip planning", "Hiking and camping trips"), NameBank()),
                          ENCODER, keywords, categories, centres, None, centres.shape[1])
    engine = LocalEngine()
    topics = engine.apply("decode", stage, named)
    decodings = engine.private["centre_decodings"]
    # Topic 0's own name is nearer its centre than any decoded one: it stays, with its description.
    assert topics[0] == named[0] and not decodings[0].replaces_labels
    assert decodings[0].labels_similarity > decodings[0].similarity
    # Topic 1's mixed name gives way to the decoded one, nearer its centre.
    assert topics[1]["name_evidence"] == NAME_EVIDENCE and topics[1]["name_from_labels"] == "Mixed: sql, hiking"
    assert decodings[1].replaces_labels and "trip" in topics[1]["name"] and "sql" not in topics[1]["name"].casefold()


@pytest.mark.e2e
def test_released_topics_with_decoded_names_are_the_same_on_beam_and_in_process():
    keywords, labels, centres, sizes, categories = _release_inputs()
    namer = KeywordClusterNamer(categories)
    decoder = DecoderSettings(TemplateLabelWriter(), _bank())
    exemplars = ExemplarParams(exemplars_per_topic=0, exemplar_candidates=4, exemplar_rounds=1)
    from publishing.previous_nights import PreviousNights
    local = LocalEngine()
    public = PublicKeywords(keywords, categories, None, EMBEDDING.encoder)
    settings = ReleaseSettings(namer, "n", exemplars, None, decoder)
    expected = release_topics(local, labels, KeptClusters(sizes, list(sizes)),
                              DPKMeansOutput(centres, None, None, centres.shape[1]), public, settings, PreviousNights())
    assert all(t.get("name_evidence") == NAME_EVIDENCE for t in expected.topics.values())
    assert len({t["name"].casefold() for t in expected.topics.values()}) == len(expected.topics)
    assert sorted(local.private["centre_decodings"]) == sorted(labels)

    with local_pipeline() as pipeline:
        kept_sizes, kmeans = beam_release_inputs(pipeline, centres, sizes)
        released = release_topics(BeamEngine(), pipeline | "labels" >> beam.Create(sorted(labels.items())),
                                  KeptClusters(kept_sizes, kept_sizes | "ids" >> beam.Keys()), kmeans, public, settings,
                                  PreviousNights())

        def same_as_in_process(topics, hierarchy):
            assert dict(topics) == expected.topics
            assert hierarchy == [expected.hierarchy]

        assert_together(same_as_in_process, "compare", topics=released.topics, hierarchy=released.hierarchy)


@pytest.mark.e2e
def test_decoding_adds_no_epsilon_and_changes_nothing_but_the_names(tmp_path):
    """In-process (the evaluation's engine) on generated conversations, with and without the decoder,
    noise seeded and PipelineDP's fixed: the same privacy section (total epsilon, events), sizes and
    keywords; the names decoded."""

    from eval.data import embed_cached, load_dataset
    from eval.urania_inprocess import UraniaConfig, run_urania
    from synthetic.sample import write_sample
    from tests.support.release_snapshot import pipeline_dp_reproducible

    path = str(tmp_path / "conversations.jsonl")
    write_sample(path, 400, 160, seed=5)
    data = load_dataset(path)
    embeddings = embed_cached(data.facets, cache_dir=None)
    config = UraniaConfig(num_clusters=6, min_cluster_size=5)
    with pipeline_dp_reproducible():
        plain = run_urania(data.conversation_ids, data.user_ids, data.facets, embeddings,
                           dataclasses.replace(config, centre_decoder=False), seed=1, noise_seed=2)
        decoded = run_urania(data.conversation_ids, data.user_ids, data.facets, embeddings,
                             dataclasses.replace(config, centre_decoder=True), seed=1, noise_seed=2)
    assert decoded["privacy"] == plain["privacy"]
    assert decoded["privacy"]["epsilon"] == pytest.approx(plain["privacy"]["epsilon"])
    by_id = {t["id"]: t for t in plain["topics"]}
    assert [t["id"] for t in decoded["topics"]] == [t["id"] for t in plain["topics"]]
    for topic in decoded["topics"]:
        before = by_id[topic["id"]]
        assert (topic["size"], topic["keywords"], topic["label_evidence"]) == (
            before["size"], before["keywords"], before["label_evidence"])
        if topic.get("name_evidence") == NAME_EVIDENCE:
            assert topic["name_from_labels"] == before["name"]
    assert sum(t.get("name_evidence") == NAME_EVIDENCE for t in decoded["topics"]) >= len(decoded["topics"]) - 1
    assert decoded["decoded_names_note"] and "decoded_names_note" not in plain
    assert decoded["config"]["centre_decoder"] is True


# ---- the LLM writer, at the client boundary ----

def _label_answer(prompt):
    if "Focus: baking\n" in prompt or prompt.endswith("Focus: baking"):
        return "I cannot help with that."  # unreadable: this call fails and gets template labels
    count = int(re.search(r"Write (\d+)", prompt).group(1))
    subject = re.search(r"\n(Focus|Label): (.*)$", prompt, re.S).group(2).strip()
    return json.dumps({"labels": [{"name": f"Model name {i} for {subject[:20]}",
                                   "description": f"Users ask about {subject[:30]}."} for i in range(count)]})


def test_the_llm_label_writer_sends_released_labels_only_and_falls_back_per_call():
    from backends.llm.steps import LLMLabelWriter
    from config.llm import LLMParams
    from tests.support.llm_server import FakeChatServer

    topic = {**TOPIC, "description": "Users wrote private things here that must never be sent.",
             "name": "Cooking: sourdough (approximate)"}
    with FakeChatServer(answer=_label_answer) as server:
        writer = LLMLabelWriter(LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url,
                                          llm_max_retries=0, pseudonymize="off"))
        drafted = writer.write(topic, 4)
        varied = writer.vary(topic, drafted[:1], 2)
        sent = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert writer.counters.totals["calls"] == 3 and writer.counters.totals["fallbacks"] == 1
    assert all(split_label(text) is not None for text in drafted + varied)
    assert any(t.startswith("Model name") for t in drafted) and any(not t.startswith("Model name") for t in drafted)
    assert varied and all(t.startswith("Model name") for t in varied)
    for prompt in sent:
        assert "private things" not in prompt and "(approximate)" not in prompt
        messages = [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": prompt}]
        assert prompt.startswith(prompts.public_head(messages))
        assert "Name: Cooking: sourdough\nKeywords: sourdough, baking\n" in prompt


def test_parse_labels_reads_names_and_descriptions():
    from backends.llm.parsing import MalformedOutput, parse_labels
    assert parse_labels('{"labels": [{"Name": "Bread baking.", "description": "Users  bake."}]}', 3) == (
        [("Bread baking", "Users bake.")], False)
    assert parse_labels('[{"name": "a", "description": "b"}, {"name": "c", "description": "d"}]', 1)[0] == [("a", "b")]
    for bad in ('{"labels": []}', '{"labels": [{"name": ""}]}', "no json"):
        with pytest.raises(MalformedOutput):
            parse_labels(bad, 3)


@pytest.mark.e2e
def test_the_job_decodes_names_offline_and_the_page_says_they_may_be_wrong(tmp_path):
    from beam_jobs.insights import run
    from synthetic.sample import write_sample
    from tests.backends.test_llm_fault_injection import SMALL
    data = str(tmp_path / "day.jsonl")
    write_sample(data, 300, 200, seed=8)
    output = str(tmp_path / "out")
    assert run(["--input", data, "--output", output, *SMALL, "--centre_decoder"]) == 0
    report = json.load(open(os.path.join(output, "release", "report.json")))
    decoded = [t for t in report["topics"] if t.get("name_evidence") == NAME_EVIDENCE]
    assert decoded and report["decoded_names_note"] and report["config"]["centre_decoder"] is True
    assert all(t["name"] != t["name_from_labels"] or t["name_from_labels"] for t in decoded)
    # The decoder spends nothing: the run's events are the DP stages', composed to the --epsilon asked for.
    assert report["privacy"]["epsilon"] == pytest.approx(float(SMALL[SMALL.index("--epsilon") + 1]), rel=1e-3)
    page = open(os.path.join(output, "release", "report.html")).read()
    assert "decoded from the DP centre" in page and "may be wrong" in page


# ---- the real local model (CI installs it; skipped elsewhere with the reason) ----

def _local_model_installed() -> bool:
    from tests.backends.test_local_backend import TEST_MODEL, _installed
    return _installed(TEST_MODEL)


@pytest.mark.skipif(not _local_model_installed(),
                    reason="needs xllamacpp (requirements.txt) and `python scripts/install_local_llm.py --model "
                           "qwen2.5-coder-0.5b`")
@pytest.mark.real_llm
def test_the_local_model_decodes_a_centre_into_a_readable_name():
    from backends.llm import local_client
    from backends.llm.steps import LLMLabelWriter
    from tests.backends.test_local_backend import TEST_MODEL, _local_config

    held = local_client.acquire_server(local_client.local_model_path(TEST_MODEL), threads=1, slots=1)
    try:
        writer = LLMLabelWriter(_local_config())
        topic = {**TOPIC, "keywords": ["sourdough", "bread flour"], "name": "Food and cooking: sourdough"}
        centre = embed_texts(MODEL, ["My sourdough loaf is dense and does not rise. What flour and proofing time?"])[0]
        decoded = decode_centre(writer, topic, centre, lambda texts: embed_texts(MODEL, texts), None, drafts=4,
                                rounds=1, composition=Composition(first_draft=True))
    finally:
        writer.teardown()
        local_client.release_server(held)
    print("decoded:", decoded, dict(writer.counters.totals))
    assert writer.counters.totals["calls"] >= 2 and writer.counters.totals["fallbacks"] <= 1
    assert decoded is not None and 1 <= len(decoded.name.split()) <= 10 and decoded.description.endswith((".", "?", "!"))
    assert decoded.similarity >= decoded.first_draft_similarity
    assert any(w in (decoded.name + decoded.description).lower() for w in ("sourdough", "bread", "bak", "flour"))
