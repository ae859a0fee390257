"""Adapters layer (command line): the ``palimpsest`` console script."""
