"""Application layer: warnings that name the caller's line, not the library's.

Python shows a ``DeprecationWarning`` only when it is attributed to ``__main__``, and every
warning is reported at the frame ``stacklevel`` names. A fixed ``stacklevel`` breaks whenever a
call goes through one more frame of the library (a facade, a request's parsing, an async twin,
the observability wrapper), so :func:`warn_caller` walks the stack instead: the warning names the
first frame outside ``palimpsest``.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn_caller"]


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn ``message``, attributed to the first frame outside the palimpsest package."""
    frame = sys._getframe(1)
    level = 2  # warnings.warn's level of this function's caller
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith("palimpsest"):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
