"""Adapters layer: the one composition root, wiring stores, pools, models, clock and the client.

Every client in the code base comes from here: the library's :func:`open_memory`, the
command line (``profile="inspect"``) and the tests (which ``override`` providers with fakes).

:class:`Container` is a dependency-injector container. ``config.backend`` selects one store
branch per row of :data:`palimpsest.adapters.backends.BACKENDS`; each branch is a
``Resource`` that opens the store and closes it at shutdown, and a pooled backend's store
depends on the pool ``Resource`` under it, so shutdown closes the store first, then the pool.
Only the selected branch is ever opened. The model defaults (embedder, summariser, extractor,
link resolver) and the clock are providers too, chosen by ``config.profile``:

- ``"app"``: the best offline defaults (MiniLM when installed, else none; the heuristic
  extractor, TextRank summariser and rule link resolver);
- ``"inspect"``: a passive client for looking at an existing store (the command line): no
  extractor, no link resolver, extraction off, and the embedder that follows the model the
  store records (``config.embedder_choice``, see :mod:`palimpsest.adapters.embedder_choice`);
- ``"worker"``: the client of an extraction worker (``palimpsest worker``, :func:`open_worker`):
  the embedder that follows the store (as ``"inspect"``), the extractor named by
  ``config.extractor_choice`` (``"heuristic"``, the library's default, or ``"openai"``: the
  OpenAI-compatible extractor on the ``OPENAI_*`` settings), the rule link resolver, and
  extraction left to workers, so the client itself resumes nothing;
- ``"serve"``: the client of a server process (``palimpsest serve http``,
  :mod:`palimpsest.adapters.http.serve`): as ``"worker"`` (the embedder that follows the store,
  the extractor named, the rule link resolver, extraction on), so that appends record their
  extraction jobs; a server that leaves them to workers overrides ``extractor`` with ``None``.

``client`` builds ``AgentMemory`` from those providers, and :func:`open_client` hands it the
container's ``shutdown_resources`` as ``on_close``: closing the client closes what the root
opened, once, and never a store that was passed in (an overridden provider is no resource).
The container never leaks inward: application and domain code get plain constructor
arguments, and users never see it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Literal

from dependency_injector import containers, providers
from palimpsest.application import (
    AgentMemory,
    Embedder,
    ExtractionRetryPolicy,
    ExtractionRunsIn,
    Extractor,
    ImageCaptioner,
    ImageInputLimitConfig,
    LinkResolver,
    MemoryExtractionConfig,
    MemoryRetentionConfig,
    MemorySearchConfig,
    RetrievalConfig,
    StoreAdmin,
    Summariser,
)
from palimpsest.application.clock import SystemClock
from palimpsest.application.jobs import ExtractionWorker, JobOutcome
from palimpsest.application.searching import SearchStrategy
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError
from palimpsest.domain.ports import Clock, MemoryStore

from .backends import (
    BACKENDS,
    Backend,
    ConnectionSettings,
    OracleSettings,
    StoreLocation,
    choose_backend,
    requested_location,
)
from .embedder_choice import EmbedderChoice, embedder_for_store

__all__ = [
    "EXTRACTORS",
    "NO_EXTRACTION",
    "PORTS",
    "PROFILES",
    "Container",
    "build_container",
    "open_client",
    "open_memory",
    "open_worker",
]

Profile = Literal["app", "inspect", "worker", "serve"]
PROFILES: Final = ("app", "inspect", "worker", "serve")
EXTRACTORS: Final = ("heuristic", "openai")
"""The extractors a worker can be given by name (``config.extractor_choice``)."""

PORTS: Final = (
    "store",
    "embedder",
    "summariser",
    "extractor",
    "link_resolver",
    "clock",
    "memory_extraction_config",
)
"""The providers a caller may replace (``build_container(overrides=...)``, ``open_memory(...)``)."""

NO_EXTRACTION: Final = MemoryExtractionConfig(extract_memories=False)
"""The extraction defaults of a client without an extractor (and of the "inspect" profile)."""


# --- resources: what the root opens, it closes ---------------------------------------------------
# The openers are looked up in the ``backends`` provider when a resource starts, so a test can
# override that one table (with a fake pool, say) and still exercise the real lifetime wiring.


def _opened_store(backends: Mapping[str, Backend], name: str, **options: Any) -> Iterator[MemoryStore]:
    store = backends[name].open_store(**options)
    try:
        yield store
    finally:
        store.close()


def _opened_store_on_pool(
    backends: Mapping[str, Backend],
    name: str,
    *,
    pool: Any,
    settings: ConnectionSettings,
    dimension: int | None,
) -> Iterator[MemoryStore]:
    yield from _opened_store(backends, name, pool=pool, dimension=dimension, **settings.store_options())


def _opened_pool(backends: Mapping[str, Backend], name: str, settings: ConnectionSettings) -> Iterator[Any]:
    backend = backends[name]
    if backend.open_pool is None or backend.close_pool is None:
        raise ConfigurationError(f"the {name} backend opens no pool.")
    pool = backend.open_pool(settings)
    try:
        yield pool
    finally:
        backend.close_pool(pool)


def _store_branch(
    backend: Backend, config: Any, backends: providers.Provider[Any], pool: providers.Provider[Any]
) -> providers.Provider[Any]:
    """The resource that opens a store of ``backend`` from the container's configuration; a
    pooled backend's store depends on the pool resource, so it is shut down before the pool."""
    if backend.pooled:
        return providers.Resource(
            _opened_store_on_pool,
            backends,
            backend.name,
            pool=pool,
            settings=config.connection,
            dimension=config.dimension,
        )
    if backend.location == "path":
        return providers.Resource(
            _opened_store, backends, backend.name, path=config.path, dimension=config.dimension
        )
    return providers.Resource(_opened_store, backends, backend.name, dimension=config.dimension)


def _store_selector(
    config: Any, backends: providers.Provider[Any], pool: providers.Provider[Any]
) -> providers.Selector[Any]:
    branches = {backend.name: _store_branch(backend, config, backends, pool) for backend in BACKENDS.values()}
    return providers.Selector(config.backend, **branches)


# --- model defaults ----------------------------------------------------------------------------


def _offline_embedder() -> Any:
    """MiniLM on numpy when its packages and weights are installed, else ``None``."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401

        from .minilm import MiniLMEmbedder, find_model_folder

        find_model_folder(None)
    except Exception:  # noqa: BLE001 - not installed or unusable: keyword search still works
        return None
    return MiniLMEmbedder()


def _heuristic(name: str) -> Any:
    from . import heuristic

    return getattr(heuristic, name)()


def _named_extractor(choice: str) -> Any:
    """The extractor ``choice`` names: the heuristic one (the library's default), or the
    OpenAI-compatible one on ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL``."""
    if choice == "heuristic":
        return _heuristic("HeuristicExtractor")
    if choice != "openai":
        raise ConfigurationError(f"extractor must be one of {', '.join(EXTRACTORS)}, got {choice!r}.")
    try:
        from .openai import LlmExtractor, OpenAIChatModel, client_from_env, model_from_env
    except ImportError as exc:
        raise ConfigurationError(
            f"the OpenAI extractor needs the openai package ({exc}); pip install 'palimpsest-memory[openai]'."
        ) from None
    model = model_from_env()
    if model is None:
        raise ConfigurationError("the OpenAI extractor needs OPENAI_MODEL (the chat model's name).")
    return LlmExtractor(OpenAIChatModel(client_from_env(), model))


def _extraction_defaults(extractor: object) -> MemoryExtractionConfig | None:
    """The client's own defaults with an extractor; extraction off without one."""
    return None if extractor is not None else NO_EXTRACTION


class Container(containers.DeclarativeContainer):
    """The wiring of one client; build it with :func:`build_container` (validated), or directly
    and ``config.from_dict({...})`` in tests, then ``override`` any provider with a fake."""

    config = providers.Configuration(
        default={
            "backend": "memory",
            "profile": "app",
            "dimension": None,
            "embedder_choice": "auto",
            "extractor_choice": "heuristic",
        }
    )

    clock = providers.Singleton(SystemClock)

    backends = providers.Object(BACKENDS)
    """The backend table the store and pool resources open with (one branch per row)."""

    pool = providers.Resource(_opened_pool, backends, config.backend, config.connection)
    """The connection pool of a pooled backend; opened only when its store is."""

    store = _store_selector(config, backends, pool)

    admin = providers.Factory(StoreAdmin, store, clock)
    """The store's administration without a client (``palimpsest doctor`` and ``export`` read a
    store that opening a client would write settings to); a client has its own, ``memory.admin``."""

    store_embedder = providers.Singleton(embedder_for_store, config.embedder_choice, store)
    """The "inspect" profile's choice: the embedder that fits the store's recorded model, and a note."""

    embedder = providers.Selector(
        config.profile,
        app=providers.Singleton(_offline_embedder),
        inspect=store_embedder.provided.embedder,
        worker=store_embedder.provided.embedder,
        serve=store_embedder.provided.embedder,
    )
    summariser = providers.Singleton(_heuristic, "TextRankSummariser")
    extractor = providers.Selector(
        config.profile,
        app=providers.Singleton(_heuristic, "HeuristicExtractor"),
        inspect=providers.Object(None),
        worker=providers.Singleton(_named_extractor, config.extractor_choice),
        serve=providers.Singleton(_named_extractor, config.extractor_choice),
    )
    link_resolver = providers.Selector(
        config.profile,
        app=providers.Singleton(_heuristic, "RuleLinkResolver"),
        inspect=providers.Object(None),
        worker=providers.Singleton(_heuristic, "RuleLinkResolver"),
        serve=providers.Singleton(_heuristic, "RuleLinkResolver"),
    )
    memory_extraction_config = providers.Selector(
        config.profile,
        app=providers.Callable(_extraction_defaults, extractor),
        inspect=providers.Object(NO_EXTRACTION),
        worker=providers.Object(None),
        serve=providers.Object(None),
    )

    client = providers.Factory(
        AgentMemory,
        store=store,
        embedder=embedder,
        summariser=summariser,
        extractor=extractor,
        link_resolver=link_resolver,
        clock=clock,
        memory_extraction_config=memory_extraction_config,
    )


StoreLocationLike = str | os.PathLike[str] | StoreLocation | ConnectionSettings | OracleSettings
"""What names a store: a path, ``":memory:"``, a URL, or settings (see ``parse_store_location``)."""


def build_container(
    location: StoreLocationLike | None = None,
    *,
    backend: str | None = None,
    oracle: OracleSettings | None = None,
    profile: Profile = "app",
    dimension: int | None = None,
    embedder_choice: EmbedderChoice | str = EmbedderChoice.AUTO,
    extractor_choice: str = "heuristic",
    overrides: Mapping[str, Any] | None = None,
) -> Container:
    """A configured container; nothing is opened until a provider is called.

    ``overrides`` replaces providers by name (see :data:`PORTS`); a value of ``None`` there
    means "none" (no extractor, say), unlike :func:`open_memory`'s keywords, where ``None``
    means "the default". An overridden ``store`` is the caller's: the root never closes it.
    ``location`` is parsed by :func:`~palimpsest.adapters.backends.parse_store_location`;
    ``oracle`` is the old spelling of an Oracle location. Raises ``ConfigurationError`` for an
    unknown backend, profile, port or URL parameter, or arguments that do not fit the backend.
    """
    if profile not in PROFILES:
        raise ConfigurationError(f"profile must be one of {', '.join(map(repr, PROFILES))}, got {profile!r}.")
    given = dict(overrides or {})
    unknown = sorted(set(given) - set(PORTS))
    if unknown:
        raise ConfigurationError(f"unknown port(s) to override: {', '.join(unknown)}.")
    try:
        choice = EmbedderChoice(embedder_choice)
    except ValueError:
        names = ", ".join(repr(known.value) for known in EmbedderChoice)
        message = f"embedder_choice must be one of {names}, got {embedder_choice!r}."
        raise ConfigurationError(message) from None
    if extractor_choice not in EXTRACTORS:
        raise ConfigurationError(f"extractor must be one of {', '.join(EXTRACTORS)}, got {extractor_choice!r}.")
    container = Container()
    settings: dict[str, Any] = {
        "profile": profile,
        "embedder_choice": choice.value,
        "extractor_choice": extractor_choice,
    }
    if "store" in given:
        if location is not None or backend is not None or oracle is not None or dimension is not None:
            raise ConfigurationError("pass either a store or a location/backend/oracle/dimension, not both.")
    else:
        where = requested_location(location, oracle=oracle)
        chosen = choose_backend(backend, where)
        settings |= {"backend": chosen.name, "dimension": dimension}
        settings |= {"path": where.path if where else None, "connection": where.connection if where else None}
    container.config.from_dict(settings)
    for name, value in given.items():
        getattr(container, name).override(providers.Object(value))
    return container


def open_client(container: Container, **client_options: Any) -> AgentMemory:
    """The container's client; closing it shuts down every resource the container opened.

    If the client cannot be built (a model that does not fit the store, say), whatever was
    opened for it is closed before the error propagates. The library's own errors propagate
    from here, without the container's frames: their message says what to change, and a
    traceback through the wiring would only bury it (an error's cause, if any, stays chained).
    """
    if "on_close" in client_options:
        raise ConfigurationError("on_close is the composition root's own (it closes what the root opened).")
    try:
        return container.client(on_close=container.shutdown_resources, **client_options)
    except AgentMemoryError as exc:
        container.shutdown_resources()
        raise exc.with_traceback(None)  # noqa: B904 - the same error, from here
    except BaseException:
        container.shutdown_resources()
        raise


def open_worker(
    container: Container,
    *,
    threads: int = 4,
    poll_seconds: float = 0.5,
    lease_seconds: float | None = None,
    on_outcome: Callable[[JobOutcome], None] | None = None,
    backfill_seconds: float = 60.0,
) -> tuple[AgentMemory, ExtractionWorker]:
    """An extraction worker over the container's store (build it with ``profile="worker"``) and
    the client it runs with. The client leaves extraction to workers (it resumes nothing by
    itself); closing it shuts down what the container opened, once the worker has run.
    ``lease_seconds`` sets the claims' lease (``ExtractionRetryPolicy.lease_seconds``);
    ``backfill_seconds`` how often the worker embeds the rows stored without vectors (D43)."""
    policy = ExtractionRetryPolicy() if lease_seconds is None else ExtractionRetryPolicy(lease_seconds=lease_seconds)
    client = open_client(container, extraction_runs_in="workers", extraction_retry_policy=policy)
    try:
        worker = client.extraction_worker(
            threads=threads, poll_seconds=poll_seconds, on_outcome=on_outcome, backfill_seconds=backfill_seconds
        )
    except BaseException:
        client.close()
        raise
    return client, worker


def open_memory(
    location: StoreLocationLike | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    backend: str | None = None,
    oracle: OracleSettings | None = None,
    profile: Profile = "app",
    dimension: int | None = None,
    store: MemoryStore | None = None,
    embedder: Embedder | None = None,
    summariser: Summariser | None = None,
    extractor: Extractor | None = None,
    link_resolver: LinkResolver | None = None,
    clock: Clock | None = None,
    memory_extraction_config: MemoryExtractionConfig | None = None,
    memory_retention_config: MemoryRetentionConfig | None = None,
    search_strategy: SearchStrategy | None = None,
    retrieval: RetrievalConfig | None = None,
    id_factory: Callable[[], str] | None = None,
    close_store: bool = False,
    allow_embedding_model_change: bool = False,
    extraction_retry_policy: ExtractionRetryPolicy | None = None,
    extraction_runs_in: ExtractionRunsIn | str = ExtractionRunsIn.CLIENT,
    search_config: MemorySearchConfig | None = None,
    image_captioner: ImageCaptioner | None = None,
    image_input_limit_config: ImageInputLimitConfig | None = None,
) -> AgentMemory:
    """An ``AgentMemory`` on the store at ``location``: a file path (``str`` or ``Path``) for the
    embedded store, ``None`` or ``":memory:"`` for a store in this process only, or a URL such as
    ``oracle://user:password@host:1521/service?memory_store_id=acme`` for a store on a pool
    (the password may come from ``ORACLE_PASSWORD`` instead; see ``parse_store_location``).
    ``oracle=OracleSettings(dsn, user, password, memory_store_id=...)`` is the old spelling of an
    Oracle URL, and ``path=`` the old name of ``location``; ``backend`` names one of ``BACKENDS``
    explicitly. Defaults are offline:
    the MiniLM embedder when installed, and the heuristic extractor, summariser and link
    resolver; ``profile="inspect"`` gives the passive client of an existing store (no
    extractor, no link resolver, the embedder that follows the store's recorded model).
    Every port can be overridden by keyword (``store``, ``embedder``, ``summariser``,
    ``extractor``, ``link_resolver``, ``clock``, ``memory_extraction_config``); the keywords
    after them are ``AgentMemory``'s own, passed on as given. Closing the client closes the store (and pool) that ``open_memory``
    opened, store first; a store passed in is left open.
    """
    if path is not None:
        if location is not None:
            raise ConfigurationError("pass the store's location once (path= is the old name of location).")
        location = path
    ports = {
        "store": store,
        "embedder": embedder,
        "summariser": summariser,
        "extractor": extractor,
        "link_resolver": link_resolver,
        "clock": clock,
        "memory_extraction_config": memory_extraction_config,
    }
    container = build_container(
        location,
        backend=backend,
        oracle=oracle,
        profile=profile,
        dimension=dimension,
        overrides={name: value for name, value in ports.items() if value is not None},
    )
    return open_client(
        container,
        memory_retention_config=memory_retention_config,
        search_strategy=search_strategy,
        retrieval=retrieval,
        id_factory=id_factory,
        close_store=close_store,
        allow_embedding_model_change=allow_embedding_model_change,
        extraction_retry_policy=extraction_retry_policy,
        extraction_runs_in=extraction_runs_in,
        search_config=search_config,
        image_captioner=image_captioner,
        image_input_limit_config=image_input_limit_config,
    )
