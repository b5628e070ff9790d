import collections
import json

import numpy as np
import pytest

from backends.keyword_set import load_keyword_set
from beam_jobs.generate_sample import main
from synthetic.sample import MALFORMED_KINDS, generate_records
from synthetic.topics import PLANTED_TOPICS


def test_sample_has_many_topics_multi_turn_heavy_tailed_users_and_requested_malformed_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    main(["--output", str(path), "--conversations", "3000", "--users", "1000", "--seed", "5", "--malformed", "18"])
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3018
    records = [json.loads(line) for line in lines[:3000]]
    assert len({r["planted_topic"] for r in records}) >= 20
    assert sum(sum(m["role"] == "user" for m in r["messages"]) > 1 for r in records) > 1500
    per_user = sorted(collections.Counter(r["user_id"] for r in records).values())
    assert per_user[-1] >= 20 and per_user[len(per_user) // 2] <= 2  # a heavy tail over a small median


def test_malformed_kinds_are_cycled(tmp_path):
    path = tmp_path / "s.jsonl.gz"
    main(["--output", str(path), "--conversations", "5", "--users", "2", "--malformed", str(len(MALFORMED_KINDS))])
    import gzip
    assert len(gzip.open(path).read().splitlines()) == 5 + len(MALFORMED_KINDS)


def test_planted_topics_expect_keywords_that_are_in_the_default_set():
    keywords = set(load_keyword_set().keywords)
    for topic in PLANTED_TOPICS:
        assert set(topic.expected_keywords) <= keywords, topic.name


def test_topics_limits_the_sample_to_the_first_planted_topics(tmp_path):
    path = tmp_path / "s.jsonl"
    main(["--output", str(path), "--conversations", "2000", "--users", "300", "--seed", "2", "--topics", "20"])
    planted = {json.loads(line)["planted_topic"] for line in path.read_bytes().splitlines()}
    assert planted == {topic.name for topic in PLANTED_TOPICS[:20]}


def _user_chars(record: dict) -> int:
    return sum(len(m["content"]) for m in record["messages"] if m["role"] == "user")


def test_real_lengths_add_a_long_tail_and_change_nothing_else():
    planted = list(generate_records(3000, 1000, seed=5))
    real = list(generate_records(3000, 1000, seed=5, lengths="real"))
    assert real == list(generate_records(3000, 1000, seed=5, lengths="real"))  # deterministic
    for before, after in zip(planted, real):
        assert {k: v for k, v in before.items() if k != "messages"} == {k: v for k, v in after.items() if k != "messages"}
        assert after["messages"][:len(before["messages"])] == before["messages"]  # only appended turns
        assert all(m["role"] in ("user", "assistant") for m in after["messages"][len(before["messages"]):])
    planted_lengths = np.array([_user_chars(r) for r in planted])
    real_lengths = np.array([_user_chars(r) for r in real])
    # The log-normal's tail (real logs: 90th percentile 533, 99th 5,579 characters) on the planted floor.
    assert np.percentile(planted_lengths, 99) < 400
    assert 450 < np.percentile(real_lengths, 90) < 900 and np.percentile(real_lengths, 99) > 1200
    with pytest.raises(ValueError, match="lengths"):
        next(generate_records(10, 5, seed=1, lengths="long"))


def test_the_facet_mix_plants_each_topics_kind_and_its_declared_language_shares_deterministically(tmp_path):
    from synthetic.facets import FACET_TOPICS
    records = list(generate_records(8000, 2500, seed=3, facet_mix=True))
    assert records == list(generate_records(8000, 2500, seed=3, facet_mix=True))
    declared = {topic.topic: topic for topic in FACET_TOPICS}
    assert {r["planted_topic"] for r in records} == set(declared)
    by_topic = collections.defaultdict(collections.Counter)
    for record in records:
        topic = declared[record["planted_topic"]]
        assert record["planted_request_kind"] == topic.request_kind
        by_topic[topic.topic][record["planted_language"]] += 1
        # Every user turn is one of the topic's templates in the planted language (the ticket aside).
        templates = topic.phrasings[record["planted_language"]].templates
        for turn in (m["content"] for m in record["messages"] if m["role"] == "user"):
            turn = turn.split(" (ticket ")[0]
            assert any(_matches(template, turn) for template in templates), turn
    for name, counts in by_topic.items():
        total = sum(counts.values())
        shares = {"en": 1 - sum(declared[name].languages.values()), **declared[name].languages}
        assert set(counts) == set(shares)
        for language, share in shares.items():
            sd = (share * (1 - share) / total) ** 0.5
            assert abs(counts[language] / total - share) < 4 * sd, (name, language)
    # The default sample carries no planted facets; the facet mix keeps to its own turn lengths.
    assert "planted_language" not in next(generate_records(5, 2, seed=3))
    with pytest.raises(ValueError, match="lengths"):
        next(generate_records(5, 2, seed=3, facet_mix=True, lengths="real"))
    path = tmp_path / "f.jsonl"
    main(["--output", str(path), "--conversations", "50", "--users", "20", "--seed", "3", "--facet_mix"])
    assert [json.loads(line) for line in path.read_bytes().splitlines()] == list(
        generate_records(50, 20, seed=3, facet_mix=True))


def _matches(template: str, text: str) -> bool:
    """Does `text` fill `template`'s slots?"""
    import re
    pattern = "".join(".+" if i % 2 else re.escape(part) for i, part in enumerate(re.split(r"\{(\w+)\}", template)))
    return re.fullmatch(pattern, text) is not None
