"""NameClusters: topics named from their released keywords and categories, every name distinct."""

import apache_beam as beam
from apache_beam.testing.util import assert_that

from backends.keyword_categories import KeywordCategories
from backends.label_evidence import APPROXIMATE, NO_LABEL, UNVERIFIED, VOTED
from backends.offline import KeywordClusterNamer
from core.label_sources import CENTROID_SOURCE, HISTOGRAM_SOURCE, NO_SOURCE
from tests.conftest import checked, local_pipeline
from transforms.distinct_names import distinct_names
from transforms.name_clusters import NameClusters, name_topic

CATEGORY_OF = {"python": "Python coding", "unit testing": "Python coding", "django": "Python coding",
               "error message": "Python coding", "flask": "Python coding", "vegetables": "Food and cooking",
               "fever": "Health", "symptoms": "Health", "money laundering": "Crime and fraud",
               "human trafficking": "Crime and fraud", "regular expressions": "Python coding"}
SENSITIVE = frozenset({"Crime and fraud"})


def _named(keyword_lists):
    namer = KeywordClusterNamer(KeywordCategories(CATEGORY_OF))
    return {cluster: dict(zip(("name", "description"), namer.name(keywords)), keywords=keywords)
            for cluster, keywords in enumerate(keyword_lists)}


def test_topics_that_share_a_name_are_told_apart_by_a_keyword_of_the_names_category():
    named = _named([["python", "unit testing", "vegetables", "django"],
                    ["python", "unit testing", "flask"],
                    ["fever", "symptoms"]])
    assert named[0]["name"] == named[1]["name"] == "Python coding: python and unit testing"
    names = {c: t["name"] for c, t in distinct_names(named, CATEGORY_OF).items()}
    # "vegetables" ranks before "django" but is another category's: it never enters the name.
    assert names == {0: "Python coding: python and unit testing (django)",
                     1: "Python coding: python and unit testing (flask)",
                     2: "Health: fever and symptoms"}


def test_of_topics_with_nothing_to_tell_them_apart_the_first_keeps_the_name_and_the_others_are_numbered():
    named = _named([["fever", "symptoms"], ["fever", "symptoms", "vegetables"], ["fever", "symptoms"], [], []])
    names = [t["name"] for _, t in sorted(distinct_names(named, CATEGORY_OF).items())]
    assert names == ["Health: fever and symptoms", "Health: fever and symptoms (2)", "Health: fever and symptoms (3)",
                     "Unlabelled topic", "Unlabelled topic (2)"]
    assert named[1]["name"] == "Health: fever and symptoms"  # the input is not changed


def test_distinct_names_stay_within_ten_words_and_are_deterministic():
    long_name = "One two three four five six seven eight nine ten"
    named = {7: {"name": long_name, "description": "", "keywords": ["python", "django"]},
             3: {"name": long_name, "description": "", "keywords": ["python", "flask"]},
             5: {"name": "One two three four five six seven (flask)", "description": "", "keywords": ["x"]}}
    result = distinct_names(named, CATEGORY_OF)
    names = [result[c]["name"] for c in sorted(result)]
    assert len(set(n.casefold() for n in names)) == 3
    assert all(len(n.split()) <= 10 for n in names)
    assert distinct_names(dict(reversed(list(named.items()))), CATEGORY_OF) == result


def test_the_stage_names_each_topic_and_makes_the_names_distinct():
    keyword_lists = [["python", "unit testing", "django"], ["python", "unit testing", "flask"], ["fever"]]
    categories = KeywordCategories(CATEGORY_OF)
    expected = {c: {**t, "label_source": HISTOGRAM_SOURCE, "label_evidence": VOTED}
                for c, t in _named(keyword_lists).items()}
    expected = distinct_names(expected, CATEGORY_OF)
    fever = {"name": "Health: fever", "keywords": ["fever"], "label_source": HISTOGRAM_SOURCE,
             "label_evidence": VOTED, "description": KeywordClusterNamer(categories).name(["fever"])[1]}

    def named_and_distinct(named):
        result = dict(named)
        assert result == expected
        assert result[2] == fever

    with local_pipeline() as pipeline:
        named = (pipeline | beam.Create([(c, (k, HISTOGRAM_SOURCE, None)) for c, k in enumerate(keyword_lists)])
                 | NameClusters(KeywordClusterNamer(categories), categories))
        assert_that(named, checked(named_and_distinct), label="named")


def test_a_label_says_how_far_it_rests_on_the_topics_own_votes():
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    namer = KeywordClusterNamer(categories)
    crime = ["money laundering", "human trafficking", "regular expressions"]
    voted = name_topic(namer, crime, HISTOGRAM_SOURCE, categories)
    assert voted["label_evidence"] == VOTED and voted["name"] == "Crime and fraud: money laundering and human trafficking"
    # The same keywords nearest the DP centre, no vote behind them: no claim of crime anywhere; it is
    # named by the category of the rest of its guess.
    guessed = name_topic(namer, crime, CENTROID_SOURCE, categories)
    assert guessed["label_evidence"] == UNVERIFIED and guessed["label_source"] == CENTROID_SOURCE
    assert guessed["name"] == "Python coding (approximate)"
    assert not any(word in (guessed["name"] + guessed["description"]).casefold()
                   for word in ("crime", "laundering", "trafficking", "possibly"))
    assert "not evidence" in guessed["description"]
    # A centre guess never releases a sensitive keyword: not in the keywords, so in nothing built from them.
    assert guessed["keywords"] == ["regular expressions"]
    approximate = name_topic(namer, ["python", "unit testing"], CENTROID_SOURCE, categories)
    assert approximate["label_evidence"] == APPROXIMATE
    assert approximate["name"] == "Python coding: python and unit testing (approximate)"
    assert "nearest the topic's DP centre" in approximate["description"]
    assert name_topic(namer, [], NO_SOURCE, categories)["label_evidence"] == NO_LABEL
    # Without the sensitive mark the same guess is only approximate.
    plain = KeywordCategories(CATEGORY_OF)
    assert name_topic(KeywordClusterNamer(plain), crime, CENTROID_SOURCE, plain)["label_evidence"] == APPROXIMATE


def test_an_approximate_label_drops_its_sensitive_keywords_and_keeps_its_mark_within_ten_words():
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    namer = KeywordClusterNamer(categories)
    mostly_code = ["python", "money laundering", "unit testing", "regular expressions"]
    topic = name_topic(namer, mostly_code, CENTROID_SOURCE, categories)
    assert topic["label_evidence"] == APPROXIMATE
    assert topic["keywords"] == ["python", "unit testing", "regular expressions"]
    assert "laundering" not in topic["name"] + topic["description"]
    # Its own votes may name a sensitive keyword: they are evidence.
    assert name_topic(namer, mostly_code, HISTOGRAM_SOURCE, categories)["keywords"] == mostly_code

    class TenWords:
        def name(self, keywords):
            return "One two three four five six seven eight nine ten", ""

    long = name_topic(TenWords(), ["python"], CENTROID_SOURCE, categories)
    assert long["name"] == "One two three four five six seven eight nine (approximate)"

    class Dangling:
        def name(self, keywords):
            return "Python coding: python type hints and python modules and imports", ""

    # Cut to 9 words, it would end on "and": the cut drops it.
    assert name_topic(Dangling(), ["python"], CENTROID_SOURCE, categories)["name"] == (
        "Python coding: python type hints and python modules (approximate)")
    twins = {0: {**long, "keywords": ["python", "django"]}, 1: {**long, "keywords": ["python", "flask"]}}
    names = [t["name"] for _, t in sorted(distinct_names(twins, CATEGORY_OF).items())]
    assert names == ["One two three four five six seven eight (python) (approximate)",
                     "One two three four five six seven eight (flask) (approximate)"]
    assert all(len(n.split()) <= 10 for n in names)


def test_unverified_topics_of_one_name_are_numbered_never_told_apart_by_a_sensitive_keyword():
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    namer = KeywordClusterNamer(categories)
    named = {c: name_topic(namer, k, CENTROID_SOURCE, categories)
             for c, k in enumerate([["money laundering", "human trafficking"], ["human trafficking", "money laundering"],
                                    ["money laundering", "fever", "human trafficking", "symptoms"],
                                    ["human trafficking", "money laundering", "symptoms", "fever"]])}
    names = [t["name"] for _, t in sorted(distinct_names(named, CATEGORY_OF).items())]
    # Nothing but the sensitive guess: unlabelled. A rest in Health: named by it, numbered, never by "fever".
    assert names == ["Unlabelled topic", "Unlabelled topic (2)", "Health (approximate)", "Health (2) (approximate)"]


def test_a_numbered_unverified_name_keeps_its_mark_within_ten_words():
    """A category's name can be long: numbering must cut the name, never its "(approximate)"."""
    category = "Weapons explosives and other dangerous items for harm"
    other = "Home garden yard tools and other outdoor household equipment kits"
    category_of = {"pipe bombs": category, "nail bombs": category, "lawn mower": other}
    categories = KeywordCategories(category_of, sensitive=frozenset({category}))
    namer = KeywordClusterNamer(categories)
    named = {c: name_topic(namer, k, CENTROID_SOURCE, categories)
             for c, k in enumerate([["pipe bombs", "nail bombs", "lawn mower"], ["nail bombs", "pipe bombs", "lawn mower"]])}
    assert named[0]["name"] == "Home garden yard tools and other outdoor household equipment (approximate)"
    names = [t["name"] for _, t in sorted(distinct_names(named, category_of).items())]
    assert names == ["Home garden yard tools and other outdoor household equipment (approximate)",
                     "Home garden yard tools and other outdoor household (2) (approximate)"]
    assert all(len(n.split()) <= 10 for n in names)
    assert not any("bombs" in t["description"] or "weapons" in t["description"].casefold() for t in named.values())
