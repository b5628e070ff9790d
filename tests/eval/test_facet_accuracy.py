"""eval/utility/facet_accuracy.py: the classifiers' accuracy on planted answers and the DP intervals'
coverage of the planted cells."""

import re

import pytest

from config.embedding import Encoder
from eval.utility.facet_accuracy import accuracy, cell_truth, covered_cells, main, overall_covered


def test_accuracy_is_one_for_a_perfect_classifier_and_names_the_confusions():
    planted = ["en", "es", "es", "fr", "en"]
    perfect = accuracy(planted, planted)
    assert perfect["overall"] == 1.0 and all(row["recall"] == 1.0 for row in perfect["per_answer"].values())
    mixed = accuracy(planted, ["en", "es", "pt", "es", "other"])
    assert mixed["overall"] == 2 / 5
    assert mixed["per_answer"]["es"] == {"n": 2, "recall": 0.5, "confused": [("pt", 1)]}
    assert mixed["per_answer"]["fr"]["confused"] == [("es", 1)]


def test_cells_hold_the_weighted_truth_and_only_large_cells_are_scored():
    kept, weights = ["a", "b", "c", "d"], [1.0, 0.5, 0.5, 1.0]
    truth = cell_truth(kept, weights, {"a": 3, "b": 3, "c": 3, "d": 5}, {"a": "es", "b": "es", "c": "en", "d": "es"})
    assert truth[(3, "es")] == [1.5, 2] and truth[(5, "es")] == [1.0, 1]
    section = {"overall": [{"answer": "es", "low": 2.0, "high": 3.0}, {"answer": "en", "low": 0.0, "high": 0.4}],
               "by_topic": {"3": [{"answer": "es", "low": 1.0, "high": 2.0}, {"answer": "en", "low": 0.6, "high": 1.0}],
                            "5": [{"answer": "es", "low": 2.0, "high": 4.0}]}}
    assert covered_cells(section, truth, min_conversations=1) == [(3, "es", True), (3, "en", False), (5, "es", False)]
    assert covered_cells(section, truth, min_conversations=2) == [(3, "es", True)]
    assert overall_covered(section, truth) == [True, False]  # es 2.5 in [2, 3]; en 0.5 above 0.4


def test_the_script_runs_on_a_tiny_generated_set_and_prints_figures_from_it(capsys):
    # An English run model: the cue rule and the multilingual switch are for it (the default encoder, USE
    # multilingual v3, is the switch's own model and needs neither).
    main(["--conversations", "200", "--users", "80", "--num_clusters", "3", "--noise_seeds", "1",
          "--min_conversations", "5", "--real_data", "", "--set", "embedding_model=all-MiniLM-L6-v2"])
    out = capsys.readouterr().out
    assert "200 conversations" in out
    language = float(re.search(r"language: ([\d.]+) of 200", out).group(1))
    assert 0.9 <= language <= 1.0  # short template sentences in eight languages, fastText's own
    for held, cells in re.findall(r"the planted size (\d+)/(\d+)", out):
        assert 0 <= int(held) <= int(cells)
    assert re.search(r"request_kind with the cue rule: [\d.]+ of 200", out)
    assert re.search(r"request_kind with the cue rule and the multilingual model: [\d.]+ of 200", out)
    # Per rule (without cues, with cues, with cues and the multilingual model): English / not English.
    splits = [(float(en), int(n_en), float(other), int(n_other)) for en, n_en, other, n_other in
              re.findall(r"    English ([\d.]+) of (\d+), not English ([\d.]+) of (\d+)", out)]
    assert len(splits) == 3 and all(n_en + n_other == 200 and n_other > 20 for _, n_en, _, n_other in splits)
    assert splits[2][0] == splits[1][0]  # English texts keep the run's model and their answers
    assert splits[2][2] > splits[1][2] + 0.2  # the multilingual model is what non-English requests needed


@pytest.mark.real_model
def test_the_threshold_match_carries_the_run_share_to_the_multilingual_scale(tmp_path):
    import dataclasses

    from backends.facet_set import load_facet_set
    from eval.utility.facet_accuracy import threshold_match_line
    from synthetic.sample import write_sample

    path = str(tmp_path / "english.jsonl")
    write_sample(path, 60, 30, seed=4)
    request_kind = load_facet_set().facets[1]

    def matched(min_similarity):
        line = threshold_match_line(path, dataclasses.replace(request_kind, min_similarity=min_similarity),
                                    Encoder("all-MiniLM-L6-v2"))
        share, similarity = re.search(r"([\d.]+)% below .* at that share (-?[\d.]+)", line).groups()
        return float(share), float(similarity)

    (none_below, lowest), (half, middle), (all_below, highest) = matched(-1.0), matched(0.3), matched(1.01)
    assert none_below == 0.0 and all_below == 100.0 and 0 < half < 100
    assert lowest <= middle <= highest and lowest < highest
