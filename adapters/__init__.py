"""Adapters of palimpsest: one sub-package per technology, plus the composition root."""
