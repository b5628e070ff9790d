"""Where a released topic's label keywords came from (its `label_source` in report.json).

The stage that labels a topic (transforms/voted_labels.label_keywords), the backends that word its
name and evidence, and the report that publishes it all name the same sources, so they are declared here.
"""

from __future__ import annotations

# Its own DP keyword votes cleared the noise floor.
HISTOGRAM_SOURCE = "dp_keyword_histogram"
# Its DP category votes cleared the floor and no keyword did: it is named by its category.
CATEGORY_SOURCE = "dp_category_votes"
# A topic labelled from either is named by its own DP votes.
VOTE_SOURCES = (HISTOGRAM_SOURCE, CATEGORY_SOURCE)
# No vote cleared the floor: the keywords nearest its DP centre (post-processing, a guess).
CENTROID_SOURCE = "nearest_keywords_to_dp_centre"
NO_SOURCE = "none"
