"""Domain layer of palimpsest: entities, lifecycle rules, search semantics, errors and storage ports.

Pure Python: nothing here imports a third-party package (a test enforces it). Every public
name of the submodules is re-exported here.
"""

from . import (
    checkpoints,
    errors,
    events,
    images,
    links,
    metadata_filter,
    model,
    ports,
    search,
    sentinel,
    subjects,
    text,
)
from .checkpoints import *  # noqa: F403
from .errors import *  # noqa: F403
from .events import *  # noqa: F403
from .images import *  # noqa: F403
from .links import *  # noqa: F403
from .metadata_filter import *  # noqa: F403
from .model import *  # noqa: F403
from .ports import *  # noqa: F403
from .search import *  # noqa: F403
from .sentinel import *  # noqa: F403
from .subjects import *  # noqa: F403
from .text import *  # noqa: F403

__all__ = sorted(  # noqa: PLE0605 - a list at run time: the submodules' names, sorted once here
    {
        *checkpoints.__all__,
        *errors.__all__,
        *events.__all__,
        *images.__all__,
        *links.__all__,
        *metadata_filter.__all__,
        *model.__all__,
        *ports.__all__,
        *search.__all__,
        *sentinel.__all__,
        *subjects.__all__,
        *text.__all__,
    }
)
