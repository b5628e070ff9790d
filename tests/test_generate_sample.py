import collections
import json

from backends.keyword_set import load_keyword_set
from beam_jobs.generate_sample import MALFORMED_KINDS, main
from beam_jobs.sample_topics import PLANTED_TOPICS


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
