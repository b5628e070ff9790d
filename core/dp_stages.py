"""The names of the run's DP stages, each declared once.

A stage's name is the key its calibration request, its weight in --epsilon_weights, its registered spend,
its line in report.json's privacy section and the page's labels are filed under, so it is one constant
here, low in the stack, and every layer (the mechanisms in dp_ops/, their transforms, the report in
publishing/) imports it. What each stage releases, its default weight and its request are declared once too,
in dp_ops/dp_stage_specs.py.
"""

KEYWORD_SET = "keyword_set"  # built and spent by its own job (beam_jobs/build_keywords.py)
USER_COUNT = "user_count"
CLUSTERING = "clustering"
CLUSTER_SIZES = "cluster_sizes"
KEYWORD_HISTOGRAMS = "keyword_histograms"
THEMES = "themes"
FACETS = "facets"
FACET_TOPICS = "facet_topics"
TOKEN_DECODING = "token_decoding"
