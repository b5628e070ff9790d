"""The fixed themes' DP histogram (dp_ops/theme_histogram.py, transforms/theme_histogram.py) and their
trends (publishing/theme_timeline.py): the public mapping rule, sensitivity, noise, spend, calibration, the
per-record isolation of the stage, and the nightly and weekly statuses."""

import math

import numpy as np
import pytest

from config.embedding import Encoder, similarity_floors
from core.records import ConversationBlock, DeadLetter
from dp_ops import theme_histogram as th
from dp_ops.dp_events import composed_epsilon, event_from_json
from dp_ops.joint_calibration import calibrate_jointly
from dp_ops.run_budget import RunBudget
from publishing.theme_timeline import FIRST_NIGHT, theme_timeline, weekly_status
from tests.support.job_requests import job_requests
from transforms.theme_histogram import ThemeHistogram

FLOOR = similarity_floors("all-MiniLM-L6-v2").theme  # the rule's floor in these tests' vectors

CATEGORIES = ("Cooking", "Python", "Travel")


def _rule():
    """Six keywords in three categories: two near each of the first three axes."""
    vectors = np.array([[1.0, 0.1, 0, 0], [1.0, -0.1, 0, 0], [0, 1.0, 0.1, 0], [0.1, 1.0, 0, 0],
                        [0, 0, 1.0, 0.1], [0, 0.1, 1.0, 0]])
    keywords = ("bread", "soup", "pandas", "numpy", "flights", "hotels")
    return th.ThemeRule.of(vectors, keywords, dict(zip(keywords, np.repeat(CATEGORIES, 2))), CATEGORIES,
                           min_similarity=FLOOR)


def _by_hand(embedding, rule, neighbours=th.THEME_NEIGHBOURS):
    """The rule written out: the category most of the nearest keywords have, the nearest breaking a tie."""
    similarity = [float(np.dot(d, embedding / np.linalg.norm(embedding))) for d in rule.directions]
    order = sorted(range(len(similarity)), key=lambda i: -similarity[i])[:neighbours]
    if similarity[order[0]] < FLOOR:
        return rule.other
    counts = [sum(rule.themes[j] == rule.themes[i] for j in order) for i in order]
    return int(rule.themes[order[counts.index(max(counts))]])


def test_a_conversation_goes_to_its_nearest_keywords_category_or_other_and_alone_as_in_a_batch():
    rule = _rule()
    assert rule.other == len(CATEGORIES) and list(rule.themes) == [0, 0, 1, 1, 2, 2]
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(300, 4))
    alone = [th.nearest_theme(e, rule) for e in embeddings]
    assert alone == [_by_hand(e, rule) for e in embeddings]
    assert set(alone) == {0, 1, 2, rule.other}  # each category and Other occur
    assert [th.nearest_theme(e, rule) for e in np.array(embeddings)[::-1]] == alone[::-1]  # order-free
    assert th.nearest_theme(np.array([0.0, 0.0, 0.0, 1.0]), rule) == rule.other  # far from every keyword
    for bad in (np.zeros(4), np.array([np.nan, 1, 0, 0]), np.array([np.inf, 0, 0, 0])):
        with pytest.raises(ValueError):
            th.nearest_theme(bad, rule)


def test_the_majority_of_the_nearest_keywords_wins_over_the_single_nearest():
    """The one nearest keyword is Python's, but three of the five nearest are Cooking's."""
    vectors = np.array([[1.0, 0, 0], [0.95, 0.3, 0], [0.94, 0.31, 0.05], [0.93, 0.3, 0.1], [0, 1.0, 0], [0, 0, 1.0]])
    keywords = ("pandas", "bread", "soup", "stew", "flights", "hotels")
    categories = {"pandas": "Python", "bread": "Cooking", "soup": "Cooking", "stew": "Cooking",
                  "flights": "Travel", "hotels": "Travel"}
    rule = th.ThemeRule.of(vectors, keywords, categories, CATEGORIES, min_similarity=FLOOR)
    query = np.array([1.0, 0.05, 0.0])
    assert th.nearest_theme(query, rule, neighbours=1) == CATEGORIES.index("Python")
    assert th.nearest_theme(query, rule) == CATEGORIES.index("Cooking")
    # A tie (one keyword each) goes to the nearest.
    assert th.nearest_theme(query, rule, neighbours=2) == CATEGORIES.index("Python")


def test_keywords_without_a_category_do_not_vote_and_other_is_a_reserved_name():
    vectors = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.9, 0.1, 0]])
    rule = th.ThemeRule.of(vectors, ("a", "b", "c"), {"a": "X", "b": "X", "c": None}, ("X", "Empty"),
                           min_similarity=FLOOR)
    assert list(rule.themes) == [0, 0] and rule.directions.shape == (2, 3) and rule.other == 2
    assert th.nearest_theme(np.array([1.0, 0, 0]), rule) == 0
    empty = th.ThemeRule.of(vectors, ("a", "b", "c"), {}, ("X",), min_similarity=FLOOR)
    assert th.nearest_theme(np.array([1.0, 0, 0]), empty) == empty.other
    with pytest.raises(ValueError, match="Other"):
        th.theme_columns(("Travel", th.OTHER_THEME))


def test_a_users_theme_votes_are_its_theme_counts_scaled_to_l2_norm_one():
    rng = np.random.default_rng(2)
    for _ in range(500):
        themes = [CATEGORIES[i] for i in rng.integers(0, len(CATEGORIES), size=int(rng.integers(1, 6)))]
        votes = dict(th.user_theme_votes(themes))
        assert math.sqrt(sum(v * v for v in votes.values())) == pytest.approx(1.0)  # the sum's sensitivity
        assert set(votes) == set(themes)
        first = themes[0]
        for theme in votes:  # proportional to the counts
            assert votes[theme] / votes[first] == pytest.approx(themes.count(theme) / themes.count(first))
    assert th.user_theme_votes(["Travel"] * 4) == [("Travel", 1.0)]
    assert th.user_theme_votes(["Python", "Cooking"]) == [("Cooking", pytest.approx(0.5 ** 0.5)),
                                                           ("Python", pytest.approx(0.5 ** 0.5))]


def test_the_stage_groups_a_users_conversations_across_blocks_before_scaling_its_votes():
    cooking, python = [1.0, 0.01, 0.01, 0.01], [0.01, 1.0, 0.01, 0.01]
    split = [_block([cooking, python], users=["u", "v"]), _block([python], users=["u"])]
    joined = [_block([cooking, python, python], users=["u", "v", "u"])]
    sizes = [t["size"] for t in _stage(None, None).local(split).section["themes"]]
    assert sizes == pytest.approx([0.5 ** 0.5, 1 + 0.5 ** 0.5, 0.0, 0.0], abs=0.01)  # u: 1/sqrt2 in each
    assert _stage(None, None).local(joined).section == _stage(None, None).local(split).section


def test_the_stage_releases_every_theme_with_the_calibrated_noise_and_registers_its_spend():
    def requests_of(themes: str):
        return job_requests("--kmeans_iterations", "2", "--max_conversations_per_user", "5", "--expected_users", "1000",
                            "--themes", themes,
                            "--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:2,user_count:0.1,themes:1")

    requests = requests_of("true")
    assert [r.stage for r in requests] == ["clustering", "cluster_sizes", "keyword_histograms", "themes"]
    assert "themes" not in [r.stage for r in requests_of("false")]
    joint = calibrate_jointly(7.0, 1e-6, requests)
    budget = RunBudget(1e-6)
    for stage in ("clustering", "cluster_sizes", "keyword_histograms"):
        budget.register(_spend_of(joint, stage), joint.stages[stage].event())
    stage = _stage(joint.stages["themes"].noise_multiplier, budget)
    assert stage._release.spend.stage == "themes" and budget.epsilon() == pytest.approx(7.0, abs=1e-3)
    sigma = joint.stages["themes"].noise_multiplier
    assert event_from_json(stage._release.spend.event) == joint.stages["themes"].event()
    # The noise: released minus exact, over many themes' draws (PyDP's sampler).
    block = _block([[1.0, 0.01, 0.01, 0.01]] * 3, users=["u", "u", "v"])
    draws = np.array([[t["size"] for t in _stage(joint.stages["themes"].noise_multiplier, None).local([block])
                      .section["themes"]] for _ in range(400)])
    exact = np.array([2.0, 0, 0, 0])  # two users, each wholly in the first theme
    assert (draws - exact).std() == pytest.approx(sigma, rel=0.06) and abs((draws - exact).mean()) < 0.1 * sigma


def test_the_95_percent_interval_holds_the_true_size_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    sigma, true, hits = 4.0, 30.0, 0
    for _ in range(4000):
        row = th.themes_section({"A": true + rng.normal(0, sigma)}, sigma, frozenset())["themes"][0]
        hits += row["low"] <= true <= row["high"]
    assert 0.94 < hits / 4000 < 0.96


def test_a_conversation_without_a_usable_embedding_is_dead_lettered_alone():
    good = [[1.0, 0.01, 0.01, 0.01], [0.01, 1.0, 0.01, 0.01]]
    alone = _stage(None, None).local([_block(good)])
    mixed = _stage(None, None).local([_block([good[0], [np.nan, 0, 0, 0], good[1]])])
    assert [d.reason for d in mixed.dead_letter] == ["theme_assignment_failed"]
    assert all(isinstance(d, DeadLetter) for d in mixed.dead_letter) and not alone.dead_letter
    assert mixed.section == alone.section  # exact mode: the bad record changed nothing else
    assert [t["size"] for t in alone.section["themes"]] == [1.0, 1.0, 0.0, 0.0]


def test_a_theme_timeline_flags_a_rising_theme_weekly_and_leaves_steady_and_weekly_patterns_alone():
    rng = np.random.default_rng(5)
    sigma, nights = 4.0, 60
    runs = []
    for night in range(nights):
        steady = 80 + rng.normal(0, sigma) + rng.normal(0, 3)
        weekly = (160 if night % 7 == 5 else 40) + rng.normal(0, sigma)  # four times larger one day a week
        riser = 20 + (0 if night < 40 else 3.0 * (night - 40)) + rng.normal(0, sigma)  # +15% a night from night 40
        themes = [{"id": name, "name": name, "kind": "category", "size": size, "low": size - 7.8,
                   "high": size + 7.8, "share": 0.1} for name, size in (("steady", steady), ("weekly", weekly),
                                                                         ("riser", riser))]
        runs.append((f"2026-01-{night + 1:02d}" if night < 31 else f"2026-02-{night - 30:02d}",
                     {"themes": {"sigma": sigma, "themes": themes}}))
    timeline = {t["id"]: t for t in theme_timeline(runs)}
    assert timeline["steady"]["nights"][0]["status"] == FIRST_NIGHT
    first_rise = next(n for n in range(41, nights + 1) if weekly_status(
        [(s["size"], sigma ** 2) for s in timeline["riser"]["nights"][:n]]) == "rising")
    # Flagged about a week after it starts to rise (6-8 nights over 20 seeds); no single night of this ramp
    # stands out from its previous week's (the nightly status stays steady): the week's mean is what shows it.
    assert first_rise - 40 <= 8
    assert {n["status"] for n in timeline["riser"]["nights"][1:first_rise]} <= {"steady", "growing"}
    weekly_flags = [weekly_status([(s["size"], sigma ** 2) for s in timeline[name]["nights"][:n]])
                    for name in ("steady", "weekly") for n in range(36, nights + 1)]
    assert weekly_flags.count("steady") == len(weekly_flags)


def _stage(noise_multiplier, budget):
    from backends.keyword_categories import KeywordCategories

    categories = KeywordCategories(dict(zip(("bread", "pandas", "flights"), CATEGORIES)))
    stage = ThemeHistogram(("bread", "pandas", "flights"), categories, Encoder("unused"), noise_multiplier, 1e-6, budget)
    stage._fn.setup = lambda: setattr(stage._fn, "_rule", _rule())  # no model: the test's own rule
    return stage


def _block(embeddings, users=None):
    """One conversation per user unless `users` names them. The blocks' weights are not the themes'
    (each user's votes are scaled to L2 norm 1), so they are all 1 here."""
    n = len(embeddings)
    return ConversationBlock([f"c{i}" for i in range(n)], users or [f"u{i}" for i in range(n)],
                             np.ones(n), [""] * n, np.array(embeddings, dtype=np.float64))


def _spend_of(joint, stage):
    from core.spend import MechanismSpend
    noise = joint.stages[stage]
    return MechanismSpend(stage=stage, mechanism=stage, epsilon=composed_epsilon([noise.event()], 1e-6), delta=1e-6,
                          sensitivity=noise.request.sensitivity, noise={})



@pytest.mark.e2e
def test_the_job_releases_the_themes_within_its_epsilon(small_run):
    import json
    import os

    report = json.load(open(os.path.join(small_run.output, "release", "report.json")))
    spends = {m["stage"]: m for m in report["privacy"]["mechanisms"]}
    sigma = spends["themes"]["noise"]["sigma"]
    # The calibration meets the budget from below, to its tolerance on the noise scale.
    assert report["themes"]["sigma"] == sigma and 7.0 - 2e-3 < report["privacy"]["epsilon"] <= 7.0
    themes = report["themes"]["themes"]
    assert themes[-1]["id"] == th.OTHER_THEME and len(themes) > 20 and report["config"]["themes"] is True
    # Each user's votes have L2 norm 1, so their sum (L1) is between 1 and sqrt(its themes) <= sqrt(C): the
    # sizes add up to between the users kept and sqrt(5) times that (the noise of ~40 themes aside).
    users = json.load(open(os.path.join(small_run.output, "private", "run_stats.json")))["users"]
    slack = 5 * sigma * math.sqrt(len(themes))
    assert users - slack < sum(t["size"] for t in themes) < math.sqrt(5) * users + slack


def test_the_timeline_carries_the_themes_and_its_page_leads_with_them():
    from publishing.theme_timeline import themes_part
    from publishing.timeline import build_timeline, timeline_rows
    from publishing.timeline_html import render_timeline_html

    runs = []
    for night in range(40):
        size = 30.0 if night < 30 else 30.0 + 12 * (night - 29)  # rises over the last 10 nights
        themes = [{"id": name, "name": name, "kind": "category", "sensitive": name == "Crime", "size": value,
                   "low": value - 7.8, "high": value + 7.8, "share": 0.5}
                  for name, value in (("Travel", size), ("Crime", 30.0))]
        runs.append((f"2026-03-{night + 1:02d}" if night < 31 else f"2026-04-{night - 30:02d}",
                     {"topics": [], "themes": {"sigma": 4.0, "themes": themes}}))
    timeline = build_timeline(runs, max_nights=10)
    timeline.update(themes_part(runs, timeline["nights"]))
    assert [t["id"] for t in timeline["themes"]] == ["Travel", "Crime"] and timeline["rising_themes"] == ["Travel"]
    assert [len(t["nights"]) for t in timeline["themes"]] == [10, 10]  # statuses from all 40, 10 shown
    assert timeline["themes"][1]["weekly"]["status"] == "steady"
    rows = [row for row in timeline_rows(timeline) if row["kind"] == "theme"]
    assert len(rows) == 20 and rows[0]["lineage_id"] == "Travel" and isinstance(rows[0]["size"], int)
    page = render_timeline_html(timeline)
    assert page.index('id="themes"') < page.index('id="summary"')
    rising = page[page.index('id="rising-themes"'):page.index("</section>", page.index('id="rising-themes"'))]
    assert "Travel" in rising and "Crime" not in rising
    assert '<tr data-theme="Crime"><td>Crime <span class="sub">(sensitive category)</span>' in page
    assert 'id="themes"' not in render_timeline_html(build_timeline([(d, {"topics": []}) for d, _ in runs]))


def test_a_new_topic_of_a_rising_theme_is_new_this_week_from_its_first_night(tmp_path):
    import json

    from transforms.write_timeline import write_timeline

    dates = [f"2026-05-{night:02d}" for night in range(1, 31)]
    index = {"runs": []}
    for number, date in enumerate(dates):
        size = 30.0 if number < 20 else 30.0 + 15 * (number - 19)
        topics = [{"id": 0, "name": "Flights", "size": 90, "lineage": "2026-05-01#0", "voted_category": "Travel",
                   "keywords": ["flights"]}]
        if date == dates[-1]:  # tonight only: a one-night topic, new this week only because its theme rose
            topics += [{"id": 1, "name": "Visas", "size": 40, "lineage": f"{date}#1", "voted_category": "Travel",
                        "keywords": ["visa"]},
                       {"id": 2, "name": "Bread", "size": 40, "lineage": f"{date}#2", "voted_category": "Cooking",
                        "keywords": ["bread"]}]
        themes = [{"id": name, "name": name, "kind": "category", "size": value, "low": value - 8, "high": value + 8,
                   "share": 0.5} for name, value in (("Travel", size), ("Cooking", 30.0))]
        report = {"topics": topics, "themes": {"sigma": 4.0, "themes": themes},
                  "privacy": {"mechanisms": []}, "config": {"date": date, "run_id": f"r{number}"}}
        path = tmp_path / f"dt={date}" / "run=r" / "release"
        path.mkdir(parents=True)
        (path / "report.json").write_text(json.dumps(report))
        index["runs"].append({"date": date, "path": f"dt={date}/run=r", "status": "committed"})
    (tmp_path / "index.json").write_text(json.dumps(index))
    write_timeline(str(tmp_path))
    timeline = json.load(open(tmp_path / "timeline.json"))
    assert timeline["rising_themes"] == ["Travel"]
    assert timeline["new_this_week"] == [f"{dates[-1]}#1"]  # the Cooking one-night topic stays out


# --- a risen theme seeds tonight's clustering (issue 40 item 3) -----------------------------------------

def _night_report(night: int, sizes: dict[str, float], voted: tuple[str, ...] = ()) -> dict:
    date = f"2026-11-{night + 1:02d}"
    themes = [{"id": theme, "name": theme, "kind": "other" if theme == th.OTHER_THEME else "category", "size": size}
              for theme, size in sizes.items()]
    topics = [{"id": i, "lineage": f"2026-11-01#{i}", "size": 50, "voted_category": category}
              for i, category in enumerate(voted)]
    return {"config": {"date": date}, "themes": {"sigma": 2.0, "themes": themes}, "topics": topics}


def test_a_theme_that_rose_with_no_topic_about_it_is_seeded_and_one_with_a_topic_is_not():
    from publishing.previous_nights import PreviousNights
    from publishing.theme_timeline import themes_to_seed

    rising = [20.0] * 9 + [80.0]  # its last night grew far beyond its week
    reports = [_night_report(n, {"Cooking": 50.0, "Python": rising[n], th.OTHER_THEME: rising[n]}) for n in range(10)]
    assert themes_to_seed(reports) == ("Python",)  # never the rest theme: it has no anchor
    covered = reports[:-1] + [_night_report(9, {"Cooking": 50.0, "Python": 80.0}, voted=("Python",))]
    assert themes_to_seed(covered) == ()
    steady = [_night_report(n, {"Cooking": 50.0, "Python": 20.0}) for n in range(10)]
    assert themes_to_seed(steady) == ()
    assert PreviousNights.of(reports, "m").seed_themes == ("Python",)
    assert PreviousNights.of(reports, "m", warm_start=False).seed_themes == ()
    # A public file altered to make it fail costs the seeds, never the night.
    broken = reports[:-1] + [{**reports[-1], "themes": {"sigma": "x", "themes": [{"id": "Python", "size": 1}]}}]
    assert PreviousNights.of(broken, "m").seed_themes == ()


def test_seed_themes_take_the_smallest_warm_topics_places_and_their_lineage_bonus():
    from publishing.previous_nights import PreviousNights

    warm = np.eye(4)[:3]
    previous = PreviousNights((), warm, ("a", "b", None), seed_themes=("Python",))
    room = previous.make_room(3)
    assert np.array_equal(room.warm_centres, warm[:2]) and room.warm_lineages == ("a", "b")
    assert room.seeded() == {0: "a", 1: "b"}
    assert previous.make_room(4) is previous  # a free slot already


def test_the_anchor_seeds_after_the_warm_centres():
    from dp_ops.dp_kmeans import warm_seed_centres
    from transforms.dp_kmeans import seed_directions

    rule = _rule()
    anchor = th.theme_anchor(rule, CATEGORIES.index("Python"))
    # The direction of its keywords' sum: between "pandas" and "numpy", along the second axis.
    assert np.isclose(np.linalg.norm(anchor), 1.0) and np.argmax(anchor) == 1
    assert th.nearest_theme(anchor, rule) == CATEGORIES.index("Python")
    assert th.theme_anchor(th.ThemeRule.of(np.eye(4)[:1], ("bread",), {"bread": "Cooking"}, CATEGORIES, min_similarity=FLOOR),
                           CATEGORIES.index("Travel")) is None

    class Seeds:  # ThemeSeeds' interface, with the test's rule instead of a model
        def anchors(self):
            return anchor[None]

    warm = np.eye(4)[[0, 2]]
    directions = seed_directions(warm, Seeds())
    assert np.allclose(directions, np.vstack([warm, anchor[None]]))
    seeds = warm_seed_centres(np.eye(4) * 10, directions, 4)
    assert np.allclose(seeds[:3], directions, atol=1e-6)  # kept in order: cluster 2 starts at the anchor
    assert seed_directions(None, None) is None and np.array_equal(seed_directions(warm, None), warm)
