"""Adapters layer (command line): the ``palimpsest`` console script (typer and rich).

``main`` is the console script's entry point and ``app`` the typer application (use it with
``typer.testing.CliRunner`` in tests). See ``palimpsest --help``.
"""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]
