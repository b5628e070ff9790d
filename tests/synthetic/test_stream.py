import collections
import datetime as dt
import json
import os

import pytest

from beam_jobs.generate_stream import main
from core.records import Conversation
from synthetic.stream import StreamSpec, Trend, load_planted, night_path
from synthetic.topics import PLANTED_TOPICS
from transforms.validation import parse_record

# 14 nights from Thursday 2026-10-01: Saturdays are nights 2 and 9.
ARGS = ["--start", "2026-10-01", "--nights", "14", "--conversations_per_night", "300", "--users", "400",
        "--emerging_night", "5", "--fading_night", "6", "--fade_nights", "3"]


def _write(folder, seed=3, extra=()):
    main(["--output", str(folder), "--seed", str(seed), *ARGS, *extra])
    return load_planted(str(folder))


def _records(folder, planted):
    return {date: [json.loads(line) for line in open(night_path(str(folder), date), "rb")]
            for date in planted["dates"]}


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stream")
    planted = _write(folder)
    return folder, planted, _records(folder, planted)


def test_writes_one_folder_a_night_in_the_jobs_date_layout_and_records_the_trends(stream):
    folder, planted, records = stream
    assert sorted(os.listdir(folder)) == [f"dt={d}" for d in planted["dates"]] + ["planted.json"]
    assert planted["dates"][0] == "2026-10-01" and len(planted["dates"]) == 14
    kinds = {t["topic"]: t for t in planted["trends"]}
    assert set(kinds) == {t.name for t in PLANTED_TOPICS}
    assert collections.Counter(t["kind"] for t in planted["trends"]) == {"steady": 22, "emerging": 1, "fading": 1,
                                                                         "weekly": 1}
    assert kinds["video games"] == {"topic": "video games", "kind": "emerging", "start_night": 5,
                                    "start_date": "2026-10-06", "full_night": 7, "factor": 1.0}
    assert kinds["travel planning"]["weekday"] == "saturday"
    for summary, date in zip(planted["nights"], planted["dates"]):  # the ground truth is the files' truth
        assert summary["counts"] == dict(collections.Counter(r["planted_topic"] for r in records[date])) | {
            t: 0 for t, n in summary["counts"].items() if n == 0}
        assert summary["conversations"] == len(records[date])


def test_every_record_is_valid_for_the_job_ids_are_unique_across_nights_and_dated_on_their_night(stream):
    _, planted, records = stream
    ids = [r["conversation_id"] for night in records.values() for r in night]
    assert len(ids) == len(set(ids)) > 14 * 200
    for date, night in records.items():
        for line_number, record in enumerate(night, start=1):
            assert isinstance(parse_record(json.dumps(record).encode(), "stream", line_number), Conversation)
            assert record["timestamp"].startswith(date) and record["planted_topic"]


def test_the_emerging_topic_is_absent_before_its_night_then_takes_a_clear_share(stream):
    _, planted, _ = stream
    counts = [n["counts"]["video games"] for n in planted["nights"]]
    assert counts[:5] == [0] * 5 and counts[5] > 0
    share = [n["counts"]["video games"] / n["conversations"] for n in planted["nights"]]
    assert min(share[7:]) > 0.5 / len(PLANTED_TOPICS)


def test_the_fading_topic_declines_to_none_and_the_weekly_topic_peaks_on_saturdays(stream):
    _, planted, _ = stream
    fading = [n["counts"]["tenant and legal questions"] for n in planted["nights"]]
    assert min(fading[:6]) > 0 and fading[8:] == [0] * 6
    weekly = [n["counts"]["travel planning"] for n in planted["nights"]]
    saturdays = [w for w, n in zip(weekly, planted["nights"]) if n["weekday"] == "saturday"]
    others = [w for w, n in zip(weekly, planted["nights"]) if n["weekday"] != "saturday"]
    assert len(saturdays) == 2 and min(saturdays) > 2 * max(others)


def test_users_recur_across_nights_with_sticky_preferences(stream):
    _, _, records = stream
    nights_of = collections.defaultdict(set)
    topics_of = collections.defaultdict(collections.Counter)
    for date, night in records.items():
        for r in night:
            nights_of[r["user_id"]].add(date)
            topics_of[r["user_id"]][r["planted_topic"]] += 1
    assert len(nights_of) <= 400
    assert sum(len(n) >= 2 for n in nights_of.values()) > 0.6 * len(nights_of)
    dates = sorted(records)
    overlap = [len({r["user_id"] for r in records[a]} & {r["user_id"] for r in records[b]})
               for a, b in zip(dates, dates[1:])]
    assert min(overlap) > 30
    # A returning user's two favourite topics hold most of their conversations (uniform: 2 / 25).
    regulars = [c for c in topics_of.values() if sum(c.values()) >= 10]
    top_two = sum(sum(n for _, n in c.most_common(2)) for c in regulars) / sum(sum(c.values()) for c in regulars)
    assert top_two > 0.5


def test_the_same_seed_writes_the_same_stream_and_another_seed_another(tmp_path):
    _write(tmp_path / "a", seed=11)
    _write(tmp_path / "b", seed=11)
    _write(tmp_path / "c", seed=12)
    for name in ["planted.json", os.path.join("dt=2026-10-04", "conversations.jsonl")]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()


def test_trend_multipliers():
    day = dt.date(2026, 10, 3)  # a Saturday
    assert [Trend("x", "emerging", 4, 3).multiplier(n, day) for n in (3, 4, 5, 6, 9)] == [0, 1 / 3, 2 / 3, 1, 1]
    assert [Trend("x", "fading", 4, 2).multiplier(n, day) for n in (3, 4, 5, 6)] == [1, 0.5, 0, 0]
    assert Trend("x", "weekly", weekday=5, factor=4).multiplier(0, day) == 4
    assert Trend("x", "weekly", weekday=5, factor=4).multiplier(0, day + dt.timedelta(days=1)) == 1
    # --emerging_share 0.03: 3% of a night's expected conversations at its full count (of 25 topics).
    share = StreamSpec(emerging_share=0.03)
    emerging = next(t for t in share.trends() if t.kind == "emerging")
    assert emerging.multiplier(share.emerging_night + 5, day) * share.steady_rate == pytest.approx(
        0.03 * share.conversations_per_night)
    assert emerging.multiplier(share.emerging_night - 1, day) == 0
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            StreamSpec(emerging_share=bad)
    with pytest.raises(ValueError):
        StreamSpec(emerging_topic="travel planning")  # the weekly topic too
    with pytest.raises(ValueError):
        StreamSpec(fading_topic="no such topic")


def test_a_growing_topic_doubles_over_its_nights_by_the_same_factor_each_night(tmp_path):
    day = dt.date(2026, 10, 3)
    grower = Trend("x", "growing", 4, 3, factor=2.0)
    assert [grower.multiplier(n, day) for n in (3, 4, 5, 6, 9)] == pytest.approx([1, 2 ** (1 / 3), 2 ** (2 / 3), 2, 2])
    assert all(t.kind != "growing" for t in StreamSpec().trends())  # none unless asked: earlier streams unchanged
    planted = _write(tmp_path, extra=["--growing_topic", "gardening", "--growing_night", "3", "--growing_nights", "7"])
    trend = next(t for t in planted["trends"] if t["kind"] == "growing")
    assert trend == {"topic": "gardening", "kind": "growing", "start_night": 3, "start_date": "2026-10-04",
                     "full_night": 9, "factor": 2.0}
    expected = [n["expected"]["gardening"] for n in planted["nights"]]
    steady = 300 / len(PLANTED_TOPICS)
    assert expected[:3] == [pytest.approx(steady)] * 3 and expected[9:] == [pytest.approx(2 * steady)] * 5
    # the same factor each night (the summary rounds to 3 decimals)
    steps = [later / earlier for earlier, later in zip(expected[2:9], expected[3:10])]
    assert steps == pytest.approx([2 ** (1 / 7)] * 7, rel=1e-3)
    with pytest.raises(ValueError):
        StreamSpec(growing_topic="video games")  # the emerging topic
    with pytest.raises(ValueError):
        StreamSpec(growing_topic="gardening", growing_nights=0)
