"""eval/utility/facet_shares.py's comparison of the DP facet rows with the exact ones."""

from eval.utility.facet_shares import compare


def _row(answer, size, margin=10.0, share=0.0):
    return {"answer": answer, "size": size, "low": max(0.0, size - margin), "high": size + margin, "share": share}


def test_the_comparison_counts_the_exact_sizes_inside_the_dp_intervals_and_skips_empty_answers():
    dp = {"language": {"question": "Which language?", "sigma": {"overall": 5.1, "by_topic": 5.1},
                       "overall": [_row("en", 100.0), _row("es", 30.0), _row("de", -4.0), _row("ko", 25.0)],
                       "by_topic": {"0": [_row("en", 60.0), _row("es", 5.0)]}}}
    exact = {"section": {"language": {"overall": [_row("en", 95.0), _row("es", 45.0), _row("de", 0.0),
                                                  _row("ko", 0.0)],
                                      "by_topic": {"0": [_row("en", 72.0), _row("es", 4.0)]}}},
             "conversations": {"language": {"en": 0.7, "es": 0.3}}, "unknown": {"language": 2}}
    lines = compare(dp, exact, min_cell=20)
    assert "unknown: 2" in lines[0]
    listed = [line.split()[0] for line in lines[2:] if not line.startswith("  exact") and "cells" not in line]
    # de: nobody gave it and its noisy size is within the noise; ko: nobody either, but its interval
    # excludes 0, so it is listed (a chance high draw the reader must see).
    assert listed == ["en", "es", "ko"]
    assert "inside the DP 95% interval: 2 of 4 answers" in lines[-2]  # es (45 against 20-40) and ko outside
    assert lines[-1].endswith("cells with >= 20 users: 1, exact size inside the DP 95% interval in 0 (0%)")
