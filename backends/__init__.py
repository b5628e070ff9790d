"""Pluggable implementations of the pipeline's model-shaped steps.

`interfaces.py` holds the small interfaces (FacetExtractor, KeywordSelector, ClusterNamer);
`offline.py` the deterministic offline defaults; `embedding.py` loads sentence-transformers models;
`keyword_set.py` loads the public keyword set K.
"""
