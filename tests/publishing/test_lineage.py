"""Warm starts and topic lineages (publishing/lineage.py, dp_ops.dp_kmeans.warm_seed_centres,
transforms/topic_lineage.py): post-processing of released centres only."""

import numpy as np
import pytest

from dp_ops import dp_kmeans as km
from publishing.lineage import (
    KnownLineage,
    assign_lineages,
    centres_section,
    known_lineages,
    report_centres,
    split_parents,
)
from publishing.previous_nights import PreviousNights
from publishing.release_gate import scan
from transforms.topic_lineage import lineage_section

MODEL = "all-MiniLM-L6-v2"


def _unit(rng, n, d=16):
    return km.normalise_rows(rng.standard_normal((n, d)))


def _report(date, centres, lineages, sizes=None):
    topics = [{"id": c, "lineage": lineages[c], "size": (sizes or {}).get(c, 10), "name": "t", "keywords": []}
              for c in sorted(centres, key=lambda c: -(sizes or {}).get(c, 10))]
    return {"topics": topics, "config": {"date": date}, "centres": centres_section(centres, MODEL)}


def test_topics_keep_the_lineage_they_are_close_to_and_others_start_one():
    rng = np.random.default_rng(0)
    old = _unit(rng, 3)
    known = [KnownLineage(f"L{i}", old[i], "2026-11-01") for i in range(3)]
    noisy = km.normalise_rows(old + 0.05 * rng.standard_normal(old.shape))
    stranger = _unit(rng, 1)[0]
    tonight = {7: noisy[2], 3: noisy[0], 5: stranger}
    assert assign_lineages(tonight, known, "2026-11-02") == {3: "L0", 5: "2026-11-02#5", 7: "L2"}
    # One-to-one: two topics near one lineage do not share it; the closer keeps it.
    split = {0: noisy[1], 1: km.normalise_rows((old[1] + 0.3 * old[0])[None])[0]}
    assert assign_lineages(split, known[1:2], "d") == {0: "L1", 1: "d#1"}
    # Below the threshold, nothing is continued.
    assert assign_lineages({0: noisy[0]}, known[:1], "d", min_cosine=1.01) == {0: "d#0"}
    # The lineage a topic was seeded from is preferred when two are about as close.
    between = km.normalise_rows((old[0] + old[1])[None])[0]
    assert assign_lineages({4: between}, known[:2], "d", seeded={4: "L1"}) == {4: "L1"}
    assert assign_lineages({4: between}, known[:2], "d", seeded={4: "L0"}) == {4: "L0"}


def test_a_lineage_whose_first_centre_is_close_to_a_known_one_split_from_it():
    rng = np.random.default_rng(2)
    old = _unit(rng, 2)
    half = km.normalise_rows((old[0] + 0.4 * _unit(rng, 1)[0])[None])[0]  # cosine ~0.9 to lineage A
    stranger = _unit(rng, 1)[0]
    assert abs(old @ stranger).max() < 0.4
    reports = [_report("2026-11-01", {0: old[0], 1: old[1]}, {0: "2026-11-01#0", 1: "2026-11-01#1"}),
               _report("2026-11-02", {0: old[0], 1: old[1], 2: half, 3: stranger},
                       {0: "2026-11-01#0", 1: "2026-11-01#1", 2: "2026-11-02#2", 3: "2026-11-02#3"})]
    assert split_parents(reports) == {"2026-11-02#2": "2026-11-01#0"}
    # Only a lineage's first night counts, and the timeline's first night splits from nothing.
    assert split_parents(reports[1:]) == {}
    assert split_parents(reports + [reports[1]]) == {"2026-11-02#2": "2026-11-01#0"}
    # A report without centres (or in another space) splits nothing and fails nothing.
    bare = {**reports[1], "centres": None}
    assert split_parents([reports[0], bare]) == {}
    # An earlier report is a public file: whatever shape it was altered to, nothing raises.
    for altered in ({**reports[0], "centres": ["x"]}, {**reports[0], "topics": "x"}, "x", None):
        assert split_parents([altered, reports[1]]) == {}


def test_a_lineages_reference_centre_averages_its_last_nights():
    rng = np.random.default_rng(1)
    averaged, single = [], []
    for _ in range(100):
        truth = _unit(rng, 1)[0]
        nights = [km.normalise_rows((truth + 0.3 * rng.standard_normal(16))[None])[0] for _ in range(5)]
        reports = [_report(f"2026-11-0{i + 1}", {0: c}, {0: "2026-11-01#0"}) for i, c in enumerate(nights)]
        (known,) = known_lineages(reports, MODEL)
        assert known.id == "2026-11-01#0" and known.date == "2026-11-05"
        averaged.append(known.centre @ truth)
        single.append(nights[-1] @ truth)
    # The last SMOOTHING_NIGHTS nights' average is nearer the topic than the latest night alone.
    assert np.mean(averaged) > np.mean(single) + 0.05
    assert known_lineages(reports, "another-model") == []


def test_the_centres_section_round_trips_and_passes_the_release_gate():
    rng = np.random.default_rng(2)
    centres = dict(enumerate(_unit(rng, 4, 384)))
    report = _report("2026-11-01", centres, {c: f"2026-11-01#{c}" for c in centres}, sizes={0: 5, 1: 50, 2: 20, 3: 30})
    back = report_centres(report, MODEL)
    assert all(np.allclose(back[c], centres[c], atol=1e-4) for c in centres)
    # Largest topics first, as the warm start seeds them.
    previous = PreviousNights.of([report], MODEL)
    assert np.allclose(previous.warm_centres, np.stack([back[c] for c in (1, 3, 2, 0)]))
    assert previous.seeded() == {0: "2026-11-01#1", 1: "2026-11-01#3", 2: "2026-11-01#2", 3: "2026-11-01#0"}
    assert PreviousNights.of([report], MODEL, warm_start=False).warm_centres is None
    import json
    assert scan("report.json", json.dumps(report, indent=2).encode(), ()) == []


def test_warm_seeds_come_first_and_fresh_seeds_go_where_no_warm_centre_is():
    rng = np.random.default_rng(3)
    warm = _unit(rng, 2)
    # Noisy bucket sums: the two largest point where the warm centres are; a smaller one elsewhere.
    elsewhere = _unit(rng, 1)[0]
    buckets = np.stack([50 * warm[0], 40 * warm[1], 10 * elsewhere, np.zeros(16)])
    seeds = km.warm_seed_centres(buckets, warm, 3)
    assert np.allclose(seeds[:2], warm, atol=1e-6) and np.allclose(seeds[2], elsewhere, atol=1e-6)
    # Too few distinct buckets: the skipped ones fill the slots rather than failing.
    assert km.warm_seed_centres(buckets, warm, 4).shape == (4, 16)


def test_lineage_section_maps_centres_back_through_the_basis():
    rng = np.random.default_rng(4)
    basis = np.linalg.qr(rng.standard_normal((16, 16)))[0][:, :8]
    directions = km.normalise_rows(rng.standard_normal((3, 8)))
    full = km.to_embedding_space(directions, basis)
    # Projecting back (as tonight's warm seeds are) gives the same directions.
    assert np.allclose(km.to_clustering_space(full, basis, None), directions, atol=1e-5)
    section = lineage_section(directions, basis, [0, 2], PreviousNights((KnownLineage("L", full[2], None),)),
                              "2026-11-02", MODEL)
    assert section["lineages"] == {0: "2026-11-02#0", 2: "L"}
    assert set(section["centres"]["by_topic"]) == {"0", "2"}


@pytest.mark.e2e
def test_in_process_nights_warm_start_and_continue_their_lineages(tmp_path):
    """Two nights of the same generated users through the in-process job (eval/urania_inprocess.py,
    the same functions as the Beam job) at a large epsilon: the second night's topics continue."""
    from eval.data import embed_cached, load_dataset
    from eval.urania_inprocess import NightContext, UraniaConfig, run_urania
    from synthetic.sample import write_sample
    reports = []
    for night in range(2):
        path = str(tmp_path / f"n{night}.jsonl")
        write_sample(path, 400, 150, seed=night)
        data = load_dataset(path)
        report = run_urania(data.conversation_ids, data.user_ids, data.facets, embed_cached(data.facets, cache_dir=None),
                            UraniaConfig(num_clusters=6, epsilon=200.0, min_cluster_size=5), seed=night,
                            night=NightContext(f"2026-11-0{night + 1}", reports))
        report.pop("_private")
        reports.append(report)
    first, second = ({t["lineage"] for t in r["topics"]} for r in reports)
    assert all(lineage.startswith("2026-11-01#") for lineage in first)
    assert len(first & second) >= len(second) - 1


def test_malformed_earlier_reports_are_ignored_not_fatal():
    """Earlier reports are public files: a bad centre or lineage id is dropped, nothing raises."""
    rng = np.random.default_rng(5)
    good = _unit(rng, 2)
    report = _report("2026-11-01", {0: good[0], 1: good[1]}, {0: "2026-11-01#0", 1: "=HYPERLINK(x)#1"})
    report["centres"]["by_topic"]["2"] = [float("nan")] * 16
    report["centres"]["by_topic"]["3"] = [0.0] * 16
    report["centres"]["by_topic"]["4"] = [1.0] * 15
    report["topics"] += [{"id": 2, "lineage": "x#2"}, {"id": "3"}, "not a topic"]
    assert set(report_centres(report, MODEL, dim=16)) == {0, 1}
    previous = PreviousNights.of([report, {"topics": 7, "centres": []}, report], MODEL, dim=16)
    assert [k.id for k in previous.known] == ["2026-11-01#0"]
    assert previous.seeded() == {0: "2026-11-01#0"}  # the bad id seeds nothing, but its centre still seeds
    assert len(previous.warm_centres) == 2
    assert PreviousNights.of([{"centres": {"embedding_model": MODEL, "by_topic": "x"}}], MODEL).warm_centres is None


def test_released_reports_skip_what_the_job_did_not_write(tmp_path):
    import json

    from publishing.released_runs import released_reports
    (tmp_path / "index.json").write_text("{not json")
    assert released_reports(str(tmp_path)) == []
    run = tmp_path / "dt=2026-11-01" / "run=a" / "release"
    run.mkdir(parents=True)
    (run / "report.json").write_text(json.dumps({"topics": []}))
    runs = [{"date": "2026-11-01", "status": "committed", "path": "dt=2026-11-01/run=a"},
            {"date": "2026-11-02", "status": "committed", "path": "../elsewhere"},
            {"date": "2026-11-03", "status": "committed", "path": "dt=2026-11-03/run=missing"},
            {"date": "2026-11-04", "status": "rejected", "path": "dt=2026-11-01/run=a"}, "junk"]
    (tmp_path / "index.json").write_text(json.dumps({"runs": runs}))
    assert released_reports(str(tmp_path)) == [("2026-11-01", {"topics": []})]
    assert released_reports(str(tmp_path), before="2026-11-01") == []


def test_a_centre_that_is_no_unit_direction_is_dropped_and_matching_never_fails_the_run(caplog):
    """1e39 passes a Python finiteness check but is inf as float32 (NaN once normalised), which made
    the Hungarian assignment raise inside the pipeline, after the noise was drawn."""
    import logging
    rng = np.random.default_rng(6)
    good = _unit(rng, 2)
    report = _report("2026-11-01", {0: good[0], 1: good[1]}, {0: "2026-11-01#0", 1: "2026-11-01#1"})
    report["centres"]["by_topic"]["1"] = [1e39] + [0.0] * 15
    report["centres"]["by_topic"]["2"] = [1.5] + [0.0] * 15  # beyond what a unit vector's 5 decimals hold
    report["topics"].append({"id": 2, "lineage": "2026-11-01#2"})
    assert set(report_centres(report, MODEL, dim=16)) == {0}
    previous = PreviousNights.of([report], MODEL, dim=16)
    assert [k.id for k in previous.known] == ["2026-11-01#0"]
    assert np.isfinite(previous.warm_centres).all() and len(previous.warm_centres) == 1
    section = lineage_section(good, None, [0, 1], previous, "2026-11-02", MODEL)
    assert section["lineages"] == {0: "2026-11-01#0", 1: "2026-11-02#1"}
    # Whatever else goes wrong in the matching, every topic starts a lineage and the night goes on, said so.
    broken = PreviousNights((KnownLineage("2026-11-01#0", np.full(16, np.nan), "2026-11-01"),))
    with caplog.at_level(logging.WARNING, logger="urania.lineage"):
        section = lineage_section(good, None, [0, 1], broken, "2026-11-02", MODEL)
    assert section["lineages"] == {0: "2026-11-02#0", 1: "2026-11-02#1"}
    assert [r.event for r in caplog.records] == ["lineage_matching_failed"]


def test_a_lineages_reference_centre_must_be_a_direction():
    """Two nights of opposite centres sum to zero: such a lineage has no reference centre to match."""
    rng = np.random.default_rng(7)
    centre = _unit(rng, 1)[0]
    reports = [_report("2026-11-01", {0: centre}, {0: "2026-11-01#0"}),
               _report("2026-11-02", {0: -centre}, {0: "2026-11-01#0"})]
    assert known_lineages(reports, MODEL) == []


@pytest.mark.parametrize("lineage", ["4111111111111111#0", "10.0.0.1#2", "555-123-4567#1", "www.x.io#1",
                                     "2026-13-01#0", "2026-11-01#0#1", "20261101T020000Z#1", "seed#1", "x#2",
                                     "2026-11-01#", "2026-11-01 #3", "2026-11-03#0", "20261103T020000Z-abcdef#4"])
def test_a_lineage_id_the_job_did_not_write_is_not_inherited(lineage):
    """Tonight's topic would republish the id, and the release gate would reject tonight's report (or
    the id names a night after the report it appears in)."""
    rng = np.random.default_rng(8)
    centre = _unit(rng, 1)[0]
    report = _report("2026-11-02", {0: centre}, {0: lineage})
    previous = PreviousNights.of([report], MODEL)
    assert previous.known == () and previous.seeded() == {}
    assert lineage_section(centre[None], None, [0], previous, "2026-11-03", MODEL)["lineages"] == {0: "2026-11-03#0"}


@pytest.mark.parametrize("lineage", ["2026-11-01#0", "2026-11-02#17", "20261101T020000Z-0a1b2c#3", "seed7#2"])
def test_the_ids_the_code_writes_are_inherited(lineage):
    rng = np.random.default_rng(9)
    centre = _unit(rng, 1)[0]
    previous = PreviousNights.of([_report("2026-11-02", {0: centre}, {0: lineage})], MODEL)
    assert [k.id for k in previous.known] == [lineage] and previous.seeded() == {0: lineage}
    assert lineage_section(centre[None], None, [0], previous, "2026-11-03", MODEL)["lineages"] == {0: lineage}


def test_with_the_committed_nights_an_id_must_start_on_one_of_them():
    """A lineage may be older than the nights read (LOOKBACK_NIGHTS): its date is checked against every
    committed night of the output folder's index.json, not only those."""
    rng = np.random.default_rng(10)
    centres = dict(enumerate(_unit(rng, 4)))
    lineages = {0: "2026-10-01#0", 1: "2026-11-01#1", 2: "20261101T020000Z-0a1b2c#2", 3: "seed7#3"}
    report = _report("2026-11-02", centres, lineages)
    committed = frozenset({"2026-10-01", "2026-11-02"})
    assert [k.id for k in known_lineages([report], MODEL, committed=committed)] == ["2026-10-01#0"]
    previous = PreviousNights.of([report], MODEL, committed=committed)
    assert [k.id for k in previous.known] == ["2026-10-01#0"] and set(previous.seeded().values()) == {"2026-10-01#0"}
    # The in-process evaluation has no index: the pattern and the report's date decide.
    assert len(PreviousNights.of([report], MODEL).known) == 4


def test_committed_dates_are_every_committed_night_of_the_index(tmp_path):
    import json

    from publishing.released_runs import committed_dates
    assert committed_dates(str(tmp_path)) == frozenset()
    (tmp_path / "index.json").write_text("{not json")
    assert committed_dates(str(tmp_path)) == frozenset()
    runs = [{"date": "2026-10-01", "status": "committed", "path": "dt=2026-10-01/run=a"},
            {"date": "2026-11-01", "status": "committed", "path": "dt=2026-11-01/run=b"},
            {"date": "2026-11-02", "status": "committed", "path": "../elsewhere"},
            {"date": "2026-11-03", "status": "rejected", "path": "dt=2026-11-03/run=c"}, "junk"]
    (tmp_path / "index.json").write_text(json.dumps({"runs": runs}))
    assert committed_dates(str(tmp_path)) == frozenset({"2026-10-01", "2026-11-01"})


def test_the_job_checks_earlier_lineages_against_every_committed_night(tmp_path):
    """The job reads the last LOOKBACK_NIGHTS reports, but a lineage may have started before them."""
    import json

    from beam_jobs.insights import previous_nights
    from core.run_context import RunContext
    rng = np.random.default_rng(11)
    centres = dict(enumerate(_unit(rng, 2)))
    run = tmp_path / "dt=2026-11-01" / "run=b" / "release"
    run.mkdir(parents=True)
    (run / "report.json").write_text(json.dumps(_report("2026-11-01", centres, {0: "2026-10-01#0", 1: "2026-10-15#1"})))
    runs = [{"date": "2026-10-01", "status": "committed", "path": "dt=2026-10-01/run=a"},
            {"date": "2026-10-15", "status": "rejected", "path": "dt=2026-10-15/run=c"},
            {"date": "2026-11-01", "status": "committed", "path": "dt=2026-11-01/run=b"}]
    (tmp_path / "index.json").write_text(json.dumps({"runs": runs}))
    context = RunContext(run_id="20261102T020000Z-abcdef", date="2026-11-02", input_pattern="in",
                         output_root=str(tmp_path), run_dir=str(tmp_path / "run"), private_dir=str(tmp_path / "p"))
    previous = previous_nights(context, MODEL, 16, True)
    assert [k.id for k in previous.known] == ["2026-10-01#0"]
    assert len(previous.warm_centres) == 2 and previous.seeded() == {0: "2026-10-01#0"}
