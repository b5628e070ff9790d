"""eval/utility/share_coverage.py: its simulated topics are released at the job's calibration, and it tells
the released share interval (95% at 20 users) from the delta method it replaced (English at 80%)."""

from eval.urania_inprocess import UraniaConfig, joint_calibration
from eval.utility.share_coverage import measure, releases, table

CONFIG = UraniaConfig(facets="language,concern")


def test_the_releases_are_the_runs_at_its_calibrated_noise():
    found = {release.name: release for release in releases(CONFIG)}
    stages = joint_calibration(CONFIG).stages
    assert list(found) == ["facet language", "facet concern", "category votes", "keyword votes (all of K)"]
    assert found["facet language"].sigma == stages["facet_topics"].noise_multiplier
    assert found["category votes"].sigma == stages["keyword_histograms"].noise_multiplier
    assert (found["facet language"].over, found["facet concern"].over, found["category votes"].over) == (22, 5, 40)


def test_it_measures_the_released_interval_at_95_percent_and_the_delta_method_under_it():
    language = next(release for release in releases(CONFIG) if release.name == "facet language")
    tally = measure(language, 20, 400, seed=0, noise_seed=0)
    assert tally.pooled("released") >= 0.94 and tally.worst("released", 200) >= 0.92
    assert tally.worst("delta method", 200) < 0.88  # English, ~80% of the topic
    assert tally.extra("drawn as a bar (noisy share >= 5%)", "released")[1] > 400
    lines = list(table(CONFIG, [20], 50, 0, 0, only="concern"))
    assert lines[2].startswith("facet concern") and len(lines) == 4
