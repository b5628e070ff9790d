"""The real-text stream's nights (eval/utility/real_stream.py), on made-up records: the held-back theme
is absent before its night and then its share of each night, users are kept, ids are unique."""

import collections
import datetime as dt

from eval.utility.real_stream import RealStreamSpec, night_records


def _records(n):
    return [{"conversation_id": f"c{i}", "user_id": f"u{i % 7}", "messages": [{"role": "user", "content": f"text {i}"}],
             "source": "made up"} for i in range(n)]


def test_the_held_back_theme_is_absent_before_its_night_then_its_share_of_every_night():
    records = _records(200)
    labels = ["held" if i % 4 == 0 else f"other{i % 3}" for i in range(200)]
    spec = RealStreamSpec(start=dt.date(2026, 11, 1), nights=6, per_night=100, start_night=3, share=0.06,
                          held_back="held")
    nights = [night_records(spec, records, labels, n) for n in range(spec.nights)]
    for n, rows in enumerate(nights):
        counts = collections.Counter(r["planted_topic"] for r in rows)
        assert len(rows) == 100 and counts["held"] == (6 if n >= 3 else 0)
        assert all(r["timestamp"].startswith(f"2026-11-0{n + 1}T") for r in rows)
        by_id = {r["conversation_id"]: r for r in records}
        # each row is a real record, its user and text kept, under a new id of its night
        for row in rows:
            original = by_id[row["conversation_id"].split("-")[0]]
            assert row["user_id"] == original["user_id"] and row["messages"] == original["messages"]
    ids = [r["conversation_id"] for rows in nights for r in rows]
    assert len(ids) == len(set(ids))
    assert night_records(spec, records, labels, 4) == nights[4]  # a night depends on its seed and number only
