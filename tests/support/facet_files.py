"""Facet-set files for the tests of load_facet_set's checks (backends/facet_set.py)."""

from __future__ import annotations

import pytest

from backends.facet_set import load_facet_set


def assert_facet_file_refused(folder, document: str, message: str) -> None:
    """load_facet_set refuses the facet-set file `document` (written to folder/facets.json) with a ValueError
    whose text matches `message`."""
    bad = folder / "facets.json"
    bad.write_text(document)
    with pytest.raises(ValueError, match=message):
        load_facet_set(str(bad))
