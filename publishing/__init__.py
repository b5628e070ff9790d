"""What a run publishes, and what it reads back from the nights it published: post-processing of released
values only, no Beam and no access to the data.

`report.py` assembles report.json from the DP outputs and `report_html.py` renders its page (and the
comparison page); `timeline.py`, `theme_timeline.py`, `facet_timeline.py` and `facet_rows.py` build the
timeline across nights, which `timeline_html.py` renders; the pages' Jinja2 templates are in templates/.
`lineage.py` matches tonight's topics to the lineages of earlier nights, `released_runs.py` and
`previous_nights.py` read those nights back, and `release_gate.py` scans what a run is about to publish.
Imports only `core`.
"""
