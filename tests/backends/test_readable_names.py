"""The readability gate (issue 59, item 3; backends/readable_names.py): the names a small model wrote on the
real mix are refused, readable names in several languages and scripts pass, and a writer's name that fails
falls back to the vote name."""

import numpy as np
import pytest

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.offline import KeywordClusterNamer
from backends.readable_names import (
    EMPTY,
    FAR_APART,
    FRAGMENT,
    MAX_WORDS,
    MIXED_SCRIPTS,
    QUESTION,
    TOO_LONG,
    NameGate,
    ReadableNamer,
    form_problem,
    is_question,
    joined_parts,
    measured_floors,
    mixes_scripts,
    readable_namer,
    shortened,
    word_count,
)
from config.embedding import Encoder
from core.label_sources import HISTOGRAM_SOURCE
from transforms.name_clusters import NameClusters

# Names the bundled local 0.5B wrote as drafts on the real mix (issue 59), and joins of unrelated things.
UNREADABLE = ["Business and Marketing , What is the topic you are", "Hash Tables , What are hash tables used in data",
              "How do I write a Python Scripting program?",
              "What are some common jokes that people use in creative写作?"]
FAR_APART_JOINS = ["React Native Dividends, Docker Compose and cholesterol", "sugar cravings, joint pain and bread",
                   # joins the template decoder composed on the real mix before the gate
                   "Privacy Law, Newton's Laws and Cameras", "Dom manipulation, cleaning tips and Crafting",
                   "Love Languages and History and society: moral dilemmas", "Privacy Law and Newton's Laws",
                   "Dom manipulation, House training and buying a house"]
READABLE = {
    "en": ["Business and Marketing", "Writing cover letters", "Python and SQL", "Docker Compose", "Help with homework",
           "Python coding: unit testing and error messages", "Greetings and small talk", "Group By", "wanting to die",
           "Creative writing: poems and song lyrics", "Logging and Monitoring"],
    "es": ["Recetas de cocina", "Impuestos y finanzas personales", "Programación en Python", "Recetas fáciles"],
    "fr": ["Conseils de voyage", "Cuisine française"],
    "de": ["Rezepte und Kochen", "Steuererklärung"],
    "zh": ["数据库查询优化", "Python 编程", "健康饮食建议", "机器学习模型训练"],
    "ru": ["Рецепты выпечки", "Программирование на Python", "Советы по путешествиям", "Изучение английского языка"],
    "ja": ["日本語の文法"],
    "ko": ["파이썬 프로그래밍"],
}


# ---- the form alone, without a tagger or an encoder ----

def test_joined_parts_split_on_commas_ampersands_and_the_word_for_and_in_several_languages():
    assert joined_parts("sugar cravings, joint pain and bread") == ["sugar cravings", "joint pain", "bread"]
    assert joined_parts("R&D") == ["R", "D"] and joined_parts("Salt & pepper") == ["Salt", "pepper"]
    assert joined_parts("Impuestos y finanzas") == ["Impuestos", "finanzas"]
    assert joined_parts("Рецепты и выпечка") == ["Рецепты", "выпечка"]
    assert joined_parts("数据库、查询优化") == ["数据库", "查询优化"]
    assert joined_parts("Android development") == ["Android development"]  # "and" inside a word joins nothing


def test_words_of_a_script_without_spaces_count_by_characters():
    assert word_count("Business and Marketing , What is the topic you are") == 9
    assert word_count("数据库查询优化") == 4  # 7 characters, 2 a word
    assert word_count("Python 编程") == 2
    assert word_count("一二三四五六七八九十一二三四五六七") > MAX_WORDS


def test_one_script_though_a_latin_name_may_stand_in_another():
    assert not mixes_scripts("Python 编程") and not mixes_scripts("Программирование на Python")
    assert not mixes_scripts("SQL и базы данных")
    assert mixes_scripts("common jokes in creative写作")  # a lowercase English word glued to Chinese
    assert mixes_scripts("Рецепты cooking")
    assert mixes_scripts("recetas 数据库")  # a Latin word in a Chinese name must be a name or an acronym


def test_questions_in_several_languages():
    for question in ("How do I write a Python Scripting program?", "Is it safe to eat raw eggs", "Cómo hacer pan",
                     "¿Qué es Python", "Как испечь хлеб", "如何学习编程", "Python 是什么", "Hash Tables , What are they",
                     "Can you help me"):
        assert is_question(question), question
    for name in ("How-to guides", "Questions and answers", "Python classes", "Что-то новое", "Wiegen und Messen"):
        assert not is_question(name), name


def test_the_shortenings_of_a_name_keep_its_leading_parts():
    assert shortened("Health: joint pain, bread and sugar") == ["Health: joint pain and bread", "Health: joint pain",
                                                                  "Health"]
    assert shortened("sugar cravings, joint pain and bread") == ["sugar cravings and joint pain", "sugar cravings"]
    assert shortened("Cooking") == []


def test_the_floors_of_joined_parts_are_quantiles_of_the_keyword_sets_own_pairs():
    rng = np.random.default_rng(0)
    # Two categories of keywords, each spread around its own direction.
    centre_a, centre_b = np.eye(8)[0], np.eye(8)[1]
    vectors = np.stack([c + 0.3 * rng.standard_normal(8) for c in [centre_a] * 40 + [centre_b] * 40])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    categories = ["A"] * 40 + ["B"] * 40
    floors = measured_floors(vectors, categories)
    cosines = vectors @ vectors.T
    same = np.concatenate([cosines[:40, :40][np.triu_indices(40, 1)], cosines[40:, 40:][np.triu_indices(40, 1)]])
    across = cosines[:40, 40:].ravel()
    assert floors.unrelated == pytest.approx(np.quantile(same, 0.01))
    assert floors.related == pytest.approx(np.quantile(across, 0.98))
    assert floors.typical == pytest.approx(np.quantile(same, 0.6))
    assert floors.unrelated < floors.related  # within a category pairs sit far nearer than across two
    without = measured_floors(vectors, [None] * 80)
    assert without.unrelated == without.typical == without.related


class _Gate(NameGate):
    """A gate that refuses the names it is told to (and nothing else)."""

    def __init__(self, refused: dict[str, str]):
        super().__init__(None)
        self.refused = refused

    def problem(self, name):
        return self.refused.get(name)


class _Writer(ClusterNamer):
    def __init__(self, name):
        self.written = name

    def name(self, keywords):
        return self.written, "Written."


def test_a_writers_unreadable_name_falls_back_to_the_vote_name_then_to_its_shortening():
    votes = KeywordClusterNamer()
    vote_name, vote_description = votes.name(["sourdough", "bread"])
    assert vote_name == "Sourdough and bread"
    namer = ReadableNamer(_Writer("How do I bake?"), votes, _Gate({"How do I bake?": QUESTION}))
    assert namer.name(["sourdough", "bread"]) == (vote_name, vote_description)
    assert namer.fell_back == {QUESTION: 1}
    # The vote name refused too: its first readable shortening, then the vote name as it is (counted).
    namer = ReadableNamer(_Writer("How do I bake?"), votes, _Gate({"How do I bake?": QUESTION, vote_name: FAR_APART}))
    assert namer.name(["sourdough", "bread"]) == ("Sourdough", vote_description)
    refuse_all = _Gate({"How do I bake?": QUESTION, vote_name: FAR_APART, "Sourdough": FRAGMENT})
    namer = ReadableNamer(_Writer("How do I bake?"), votes, refuse_all)
    assert namer.name(["sourdough", "bread"]) == (vote_name, vote_description) and namer.unreadable == 1
    # A readable name is the writer's own; the offline namer behind the gate is its own vote name.
    assert ReadableNamer(_Writer("Sourdough baking"), votes, _Gate({})).name(["x"]) == ("Sourdough baking", "Written.")
    alone = ReadableNamer(votes, votes, _Gate({vote_name: FAR_APART}))
    assert alone.name(["sourdough", "bread"]) == ("Sourdough", vote_description)


def test_an_empty_name_is_not_a_name():
    assert form_problem(" , ") == EMPTY and form_problem("") == EMPTY


# ---- the whole gate: spaCy's tagger, the language detector, the run's encoder and the bundled keyword set ----

@pytest.fixture(scope="module")
def gate():
    encoder = Encoder()
    gate = NameGate(encoder, KeywordCategories.of_keyword_set(load_keyword_set(), encoder))
    gate.setup()
    return gate


@pytest.mark.real_model
@pytest.mark.parametrize("name", UNREADABLE + FAR_APART_JOINS)
def test_the_names_a_small_model_wrote_on_the_real_mix_are_refused(gate, name):
    assert gate.problem(name) is not None
    assert not gate.readable(name)


@pytest.mark.real_model
def test_each_bad_name_is_refused_for_what_is_wrong_with_it(gate):
    assert gate.problem("How do I write a Python Scripting program?") == QUESTION
    assert gate.problem("What are some common jokes in creative写作") == MIXED_SCRIPTS
    assert gate.problem("Hash Tables , What are hash tables used") == QUESTION
    assert gate.problem("Business and Marketing , the topic you are") == FRAGMENT
    assert gate.problem("Hash tables are used in data") == FRAGMENT  # a clause, not a noun phrase
    assert gate.problem("Recipes for the") == FRAGMENT
    assert gate.problem("Recetas para la") == FRAGMENT  # Spanish, by its function words
    assert gate.problem("Python coding. Unit tests") == FRAGMENT  # two sentences
    assert gate.problem("Math: mental math: artificial intelligence") == FRAGMENT  # two heads
    assert gate.problem("University admissions and university admissions") == FRAGMENT  # one part twice
    assert gate.problem("one two three four five six seven eight nine") == TOO_LONG
    for name in FAR_APART_JOINS:
        assert gate.problem(name) == FAR_APART


@pytest.mark.real_model
@pytest.mark.parametrize("language,name", [(language, name) for language, names in READABLE.items() for name in names])
def test_readable_names_in_several_languages_and_scripts_pass(gate, language, name):
    assert gate.problem(name) is None, (language, name, [p for p in gate.part_pairs(name)])


@pytest.mark.real_model
def test_the_bundled_keyword_sets_categories_and_keywords_read_as_names(gate):
    keyword_set = load_keyword_set()
    categories = sorted({c for c in keyword_set.category_of().values() if c})
    assert [c for c in categories if gate.problem(c) is not None] == []
    refused = [k for k in keyword_set.keywords if form_problem(k) is not None]
    assert len(refused) <= 0.005 * len(keyword_set.keywords), refused  # "how ai works", "thank you note"


@pytest.mark.real_model
def test_a_writers_question_is_replaced_by_the_vote_name_in_the_naming_stage():
    encoder = Encoder()
    categories = KeywordCategories.of_keyword_set(load_keyword_set(), encoder)
    namer = readable_namer(_Writer("How do I write a Python Scripting program?"), categories, encoder)
    labels = {0: (["python", "unit testing"], HISTOGRAM_SOURCE, None),
              1: (["sourdough"], HISTOGRAM_SOURCE, None)}
    named = NameClusters(namer, categories).local(labels)
    votes = KeywordClusterNamer(categories)
    assert named[0]["name"] == votes.name(["python", "unit testing"])[0]
    assert named[1]["name"] == votes.name(["sourdough"])[0]
    assert all(namer.gate.readable(t["name"]) for t in named.values())


@pytest.mark.real_model
def test_a_term_of_the_keyword_set_is_one_part_and_a_category_before_a_colon_is_none(gate):
    assert gate.parts_of("Web development: node.js and npm packages") == ["node.js", "npm packages"]
    assert gate.parts_of("Love Languages and History and society: moral dilemmas") == [
        "Love Languages", "History and society", "moral dilemmas"]
    assert gate.parts_of("Health and symptoms") == ["Health and symptoms"]
    assert gate.part_pairs("Health and symptoms") == []
