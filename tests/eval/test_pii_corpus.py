"""The labelled pseudonymization set (eval/pii/pii_corpus.py): deterministic, labelled correctly, varied,
and split so that the held-out half shares no template and no name with the tuning half."""

import collections
import re

from eval.pii.pii_corpus import (
    KEEP_KINDS,
    NAME_LOCALES,
    PRIVATE_KINDS,
    TEMPLATES,
    WORD_FIRST_NAMES,
    generate,
    name_pools,
    template_split,
)


def test_the_same_seed_gives_the_same_examples_and_another_seed_others():
    assert generate("heldout", 50, seed=3) == generate("heldout", 50, seed=3)
    assert generate("heldout", 50, seed=3) != generate("heldout", 50, seed=4)


def test_every_label_is_the_text_at_its_span():
    for example in generate("tune", 200) + generate("heldout", 200):
        for entity in example["entities"]:
            assert example["text"][entity["start"]:entity["end"]] == entity["value"]
            assert entity["kind"] in PRIVATE_KINDS + KEEP_KINDS


def test_the_splits_share_no_template_and_no_name():
    pools = name_pools()
    assert not {n for n, _ in pools["tune"]["first"]} & {n for n, _ in pools["heldout"]["first"]}
    assert not set(pools["tune"]["last"]) & set(pools["heldout"]["last"])
    heldout = generate("heldout", 300)
    assert {e["template"] for e in heldout} == {i for i in range(len(TEMPLATES)) if template_split(i) == "heldout"}
    tune_names = {e["value"].lower() for x in generate("tune", 300) for e in x["entities"] if e["kind"] == "PERSON"}
    heldout_names = {e["value"].lower() for x in heldout for e in x["entities"] if e["kind"] == "PERSON"}
    assert not tune_names & heldout_names


def test_the_held_out_split_is_large_and_varied():
    examples = generate("heldout", 600)
    kinds = collections.Counter(e["kind"] for x in examples for e in x["entities"])
    assert sum(kinds.values()) >= 1000 and kinds["PERSON"] >= 500 and kinds["PUBLIC_PERSON"] >= 100
    people = [e["value"] for x in examples for e in x["entities"] if e["kind"] == "PERSON"]
    word_names = {w.lower() for names in WORD_FIRST_NAMES.values() for w in names}
    assert sum(p.split()[0].lower() in word_names for p in people) >= 100
    assert sum(p.islower() for p in people) >= 50
    assert sum(bool(re.search(r"[^\x00-\x7f]", p)) for p in people) >= 10  # diacritics: Ł, ş, é, ...
    assert len(NAME_LOCALES) >= 15
