"""Beam PTransforms, one pipeline stage per module. The record types they pass around live in core/records.py.

The stages only the keyword-set builder (beam_jobs/build_keywords.py) runs are in transforms/keyword_set/.
"""
