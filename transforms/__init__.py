"""Beam PTransforms, one pipeline stage per module. The record types they pass around live in core/records.py."""
