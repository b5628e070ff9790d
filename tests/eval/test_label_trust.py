"""eval/utility/label_trust.py: the label-trust figures read from a report alone."""

from eval.utility.label_trust import label_trust

CATEGORY_OF = {"regex": "Python coding", "pandas": "Python coding", "money laundering": "Crime and fraud",
               "fever": "Health"}
SENSITIVE = frozenset({"Crime and fraud"})


def _topic(i, name, keywords, source="dp_keyword_histogram", evidence=None):
    topic = {"id": i, "name": name, "keywords": keywords, "label_source": source, "size": 50}
    return topic if evidence is None else {**topic, "label_evidence": evidence}


def test_figures_count_false_alarms_unverified_labels_and_groups_that_disagree():
    report = {"topics": [
        _topic(0, "Python coding: regex", ["regex"]),
        _topic(1, "Crime and fraud: money laundering", ["money laundering"], "nearest_keywords_to_dp_centre"),
        _topic(2, "Possibly crime and fraud (unverified)", ["money laundering"], "nearest_keywords_to_dp_centre",
               "unverified"),
        _topic(3, "Health: fever", ["fever"]),
        _topic(4, "Python coding: pandas", ["pandas"], "nearest_keywords_to_dp_centre"),
    ], "hierarchy": {"groups": [{"name": "Python coding", "topic_ids": [0, 3]},
                                {"name": "Crime and fraud", "topic_ids": [1, 4]},
                                {"name": "Unverified labels", "topic_ids": [2]}]}}
    figures = label_trust(report, CATEGORY_OF, SENSITIVE)
    assert figures["topics"] == 5 and figures["named_by_votes"] == 2
    # Topic 1 by its name, topic 4 by its group: both claim crime with no votes behind them.
    assert figures["sensitive_without_votes"] == 2 and figures["unverified"] == 1
    # Topics 0 and 1 sit in their own category's group; 3 (health) and 4 (python, in crime) do not.
    assert (figures["in_own_category_group"], figures["categorised"]) == (2, 4)
    assert figures["groups"] == 3
