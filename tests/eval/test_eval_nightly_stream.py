import dataclasses

import pytest

from dp_ops.budget_ledger import Ledger, LedgerEntry
from dp_ops.dp_events import event_to_json
from eval.urania_inprocess import UraniaConfig
from eval.utility import nightly_stream
from synthetic.stream import StreamSpec

pytestmark = pytest.mark.e2e  # embeds ~900 conversations and runs the mechanisms 4 times

WINDOW_DAYS, CAP, WINDOW_DELTA = 30, 30.0, 1e-5


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("stream"))
    spec = StreamSpec(nights=4, conversations_per_night=220, users=300, seed=3, emerging_night=2, fading_night=2,
                      fade_nights=2)
    planted = nightly_stream.prepare_stream(folder, spec)
    nights = nightly_stream.load_nights(folder, planted, UraniaConfig().embedding_model, cache_dir=None, log=None)
    config = UraniaConfig(num_clusters=6, epsilon=1.0)  # epsilon: replaced by the plan's night epsilon
    return nightly_stream.evaluate(nights, planted, config, cap=CAP, window_days=WINDOW_DAYS,
                                   window_delta=WINDOW_DELTA, seed=3, noise_seed=0, log=None)


def test_every_night_runs_and_the_ledger_holds_one_committed_entry_per_night(figures):
    assert figures["nights"] == figures["nights_run"] == 4 and figures["nights_refused"] == 0
    ledger = figures["_run"].ledger
    assert [e.date for e in ledger.entries] == ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"]
    assert all(e.events and e.status == "committed" for e in ledger.entries)
    assert figures["night_epsilon"]["reported_max"] == pytest.approx(figures["night_epsilon"]["planned"], rel=1e-3)


def test_the_independent_window_epsilon_agrees_with_the_ledger(figures):
    ledger = figures["_run"].ledger
    by_ledger = max(ledger.worst_window_spend(e.date, WINDOW_DAYS, WINDOW_DELTA)[0] for e in ledger.entries)
    assert figures["max_window_epsilon"] == pytest.approx(by_ledger, abs=1e-6)
    assert figures["worst_window"]["runs"] == 4
    # Four of the thirty nights the plan allows: well under the cap, above one night's spend.
    assert figures["night_epsilon"]["planned"] < figures["max_window_epsilon"] < CAP
    assert figures["verdicts"]["every window epsilon <= cap"]
    # One window per day from the first window holding the first night to the last night's.
    assert len(figures["windows"]) == WINDOW_DAYS + 3


def test_window_epsilons_compose_the_stored_events_not_the_sum_of_epsilons():
    import dp_accounting
    event = event_to_json(dp_accounting.GaussianDpEvent(4.0))
    ledger = Ledger()
    for day in ("2026-10-01", "2026-10-02", "2026-11-15"):
        ledger = ledger.with_entry(LedgerEntry(run_id=day, date=day, epsilon=1.5, delta=1e-6, status="committed",
                                               recorded_at="2026-10-01T00:00:00+00:00", output="x", events=(event,)))
    windows = nightly_stream.window_epsilons(ledger, 30, 1e-5)
    both = [w for w in windows if w["runs"] == 2]
    one = [w for w in windows if w["runs"] == 1]
    assert both and one
    # Two Gaussians of multiplier 4 compose to one of multiplier 4 / sqrt(2): less than twice one's epsilon.
    assert one[0]["epsilon"] < both[0]["epsilon"] < 2 * one[0]["epsilon"]
    assert both[0]["epsilon"] == pytest.approx(
        nightly_stream.composed_epsilon([dp_accounting.GaussianDpEvent(4.0 / 2 ** 0.5)], 1e-5), abs=1e-2)


def test_the_figures_have_their_parts_and_print(figures):
    trends = figures["trends"]
    assert trends["emerging"]["topic"] == "video games" and trends["emerging"]["in_stream"]
    flag = trends["emerging"]["flagged"]
    assert flag is None or {"date", "nights_to_flag", "status", "lineage", "rule"} <= set(flag)
    by_rule = trends["emerging"]["flagged_by_rule"]
    assert set(by_rule) <= set(nightly_stream.EMERGING_RULES)
    assert flag == min(by_rule.values(), key=lambda f: f["night"], default=None)
    for rule_flag in by_rule.values():
        assert rule_flag["status"] in ("new", "emerging", "growing") and rule_flag["nights_to_flag"] >= 0
        if rule_flag["rule"] == nightly_stream.EMERGING_RULES[1]:
            assert rule_flag["purity"] >= nightly_stream.EMERGING_PURITY
    assert set(trends["fading"]) >= {"topic", "lineage", "flagged"}
    steady = trends["steady"]
    assert steady["topics"] == 22 and steady["lineage_pairs"] == 22 * 3
    assert 0 <= steady["lineage_kept"] <= steady["lineage_pairs"]
    assert 0 <= steady["released_lineage_kept"] <= steady["released_lineage_pairs"] <= steady["lineage_pairs"]
    assert 0 <= trends["quality"]["mean_nmi"] <= 1 and trends["quality"]["mean_topics_released"] >= 0
    assert steady["topic_nights"] + steady["unreleased_topic_nights"] == 22 * 3
    assert set(figures["verdicts"]) and all(isinstance(v, bool) for v in figures["verdicts"].values())
    lines = nightly_stream.format_figures(figures)
    assert any(line.startswith("nights run: 4 of 4") for line in lines)
    assert sum("PASS" in line or "FAIL" in line for line in lines) == len(figures["verdicts"])


def test_a_planted_topic_maps_to_the_lineage_holding_most_of_its_conversations():
    night = nightly_stream.Night(0, "2026-10-01", ["a", "b", "c", "d"], ["u"] * 4, [""] * 4, None,
                                 {"a": "x", "b": "x", "c": "x", "d": "y"})
    report = {"topics": [{"id": 0, "lineage": "L0"}, {"id": 1}],
              "_private": {"assignments": {"a": 0, "b": 0, "c": 1, "d": 2}}}
    mapped = nightly_stream.planted_lineages([night], {"2026-10-01": report})
    assert mapped == {"2026-10-01": {"x": "L0", "y": None}}  # y's cluster 2 was not released
    report["_private"]["assignments"]["a"] = 1
    assert nightly_stream.planted_lineages([night], {"2026-10-01": report})["2026-10-01"]["x"] == "2026-10-01#1"
    assert dataclasses.is_dataclass(night)


def test_the_default_themes_stage_is_scored_and_the_free_themes_are_not_needed(figures):
    themes = figures["trends"]["themes"]  # themes are on by default: the run released them every night
    assert "free_themes" not in figures["trends"]
    assert themes["steady"]["themes"] > 1 and themes["steady"]["theme_nights"] > 0
    assert themes["emerging"]["topic"] == "video games"
    assert any(line.startswith("themes: emerging 'video games'") for line in nightly_stream.format_figures(figures))


def test_free_themes_sum_each_category_over_the_kept_clusters_with_that_many_partitions_noise():
    import math

    from dp_ops.keyword_votes import CategoryVote

    release = {(0, CategoryVote("A")): 4.0, (1, CategoryVote("A")): 2.0, (0, "bread"): 9.0,
               (1, CategoryVote("B")): -1.0, (0, CategoryVote("B")): 0.5}
    report = {"topics": [], "_private": {"keyword_votes": {"release": release, "sigma": 2.0}}}
    run = nightly_stream.StreamRun(Ledger(), {"2026-10-01": report}, {}, 0.0)
    free = nightly_stream.with_free_themes(run, 0.25)
    section = free.reports["2026-10-01"]["themes"]
    sizes = {t["id"]: t["size"] for t in section["themes"]}
    assert sizes == {"A": pytest.approx(12.0), "B": pytest.approx(-1.0)}  # summed, divided by sqrt(0.25)
    assert section["sigma"] == pytest.approx(2.0 * math.sqrt(2) / 0.5)  # two kept clusters
    assert run.reports["2026-10-01"].get("themes") is None  # the run itself is left as it was
    assert nightly_stream.with_free_themes(run, 0.0) is None  # no category votes, no free themes


def test_a_week_is_counted_once_when_it_holds_more_than_one_flagged_night():
    # 2026-10-05 is a Monday: the 5th and the 11th share a week, the 12th starts the next.
    assert nightly_stream.weeks_flagged_more_than_once(["2026-10-05", "2026-10-11", "2026-10-12"]) == 1
    assert nightly_stream.weeks_flagged_more_than_once(["2026-10-04", "2026-10-11", "2026-10-18"]) == 0
    assert nightly_stream.weeks_flagged_more_than_once(["2026-10-05", "2026-10-06", "2026-10-07"]) == 1


def test_a_change_counts_as_flagged_when_its_theme_or_its_topic_is_flagged_first():
    figures = {"trends": {"emerging": {"flagged": {"nights_to_flag": 9}}, "fading": {"flagged": None},
                          "themes": {"emerging": {"flagged": {"nights_to_flag": 4}},
                                     "fading": {"flagged": {"nights_to_flag": 8}}}}}
    assert nightly_stream.first_flags(figures) == {"emerging": 4, "fading": 8}
    figures["trends"]["themes"]["emerging"]["flagged"] = None
    assert nightly_stream.first_flags(figures) == {"emerging": 9, "fading": 8}
    del figures["trends"]["themes"]
    assert nightly_stream.first_flags(figures) == {"emerging": 9, "fading": None}


def test_the_growing_topic_is_flagged_when_its_lineage_is_under_rising_and_steady_weeks_count_as_flags():
    trend = {"topic": "g", "kind": "growing", "start_night": 2, "full_night": 5, "factor": 2.0}
    dates = [f"2026-10-0{n + 1}" for n in range(6)]
    mapped = {d: {"g": "L" if n != 3 else None} for n, d in enumerate(dates)}
    statuses = {dates[4]: "steady", dates[5]: "growing"}
    weeks = {dates[0]: "rising", dates[4]: "rising", dates[5]: "steady"}  # night 0: before its start, not counted
    figures = nightly_stream.growing_figures(trend, list(enumerate(dates)), mapped,
                                             lambda lineage, date: statuses.get(date) if lineage else None,
                                             lambda lineage, date: weeks.get(date) if lineage else None, 6)
    assert figures["flagged"]["night"] == 4 and figures["flagged"]["nights_to_flag"] == 2
    assert figures["flagged_weekly"]["night"] == 4 and figures["rising_nights"] == 2
    assert (figures["nights_since_start"], figures["nights_unreleased"], figures["lineages"]) == (4, 1, 1)
    assert figures["ramp_nights"] == 4 and figures["in_stream"]
    never = nightly_stream.growing_figures(trend, list(enumerate(dates)), mapped, lambda *_: "steady",
                                           lambda *_: "steady", 6)
    assert never["flagged"] is None and never["flagged_weekly"] is None
    assert any("never in Rising" in line for line in nightly_stream.format_growing(never))
    verdicts = nightly_stream.verdicts({"trends": {"growing": figures, "steady": {"false_flags_per_100": 0.0,
                                                                                  "released_lineage_kept_share": 1.0},
                                                   "quality": {"mean_nmi": 1.0}},
                                        "nights_run": 6, "nights_refused": 0, "max_window_epsilon": 1.0}, 6, 30.0)
    assert verdicts["growing topic in Rising (its lineage) within its 4 nights"]
    assert nightly_stream.WEEK_FLAGS == ("rising", "falling")  # a steady topic's week that rose or fell is a flag
