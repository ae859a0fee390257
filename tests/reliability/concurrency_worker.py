"""Reliability helper, run as a child process: several threads writing to one shared store.

    python concurrency_worker.py STORE PROCESS_INDEX THREADS ROUNDS

``STORE`` is a store spec (``reliability_stores``: a file path or a PostgreSQL URL and store id).

Every thread of this process runs ``ROUNDS`` rounds on one client of the store, each round:
two messages to its own conversation thread, one to the conversation shared by every worker,
a memory linked (same call) to one of the parent's root memories, a link from that memory to
its previous one, and a search. It records the ids of every call that returned (acknowledged)
and every exception, and prints them as one JSON object when all threads are done.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from reliability_stores import location

USER_ID = "conc-user"
SHARED_THREAD = "shared"
ROOTS = tuple(f"root-{i}" for i in range(8))
ROOT_TYPE = "fact"
LINK_TYPES = ("supersedes", "supports", "refines", "contradicts", "duplicates", "mentions")


def conversation(process: int, thread: int) -> str:
    return f"p{process}-t{thread}"


def run_thread(memory: AgentMemory, process: int, thread: int, rounds: int, out: dict[str, Any]) -> None:
    me = conversation(process, thread)
    acked: dict[str, list[Any]] = {"own": [], "shared": [], "records": [], "links": []}
    errors: list[str] = []
    out[me] = {"acked": acked, "errors": errors}

    def attempt(what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        try:
            call(*args, **kwargs)
            return True
        except Exception as exc:  # noqa: BLE001 - every error is a finding: record it and go on
            errors.append(
                f"{what}: {type(exc).__module__}.{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            )
            return False

    if not attempt("create_thread", memory.create_thread, thread_id=me, user_id=USER_ID):
        return
    handle = memory.get_thread(me)
    shared = memory.get_thread(SHARED_THREAD)
    previous: str | None = None
    for i in range(rounds):
        own_ids = [f"{me}-m{i}-a", f"{me}-m{i}-b"]
        if attempt(
            "add_messages",
            handle.add_messages,
            [
                {"role": "user", "content": f"{me} round {i} says hello", "id": own_ids[0]},
                {"role": "assistant", "content": f"{me} round {i} answers", "id": own_ids[1]},
            ],
        ):
            acked["own"].extend(own_ids)
        shared_id = f"{me}-s{i}"
        if attempt(
            "add_messages (shared)",
            shared.add_messages,
            [{"role": "user", "content": f"{me} round {i} in the shared thread", "id": shared_id}],
        ):
            acked["shared"].append(shared_id)
        record = f"{me}-r{i}"
        root = ROOTS[(process * 5 + thread * 3 + i) % len(ROOTS)]
        link_type = LINK_TYPES[(process + thread + i) % len(LINK_TYPES)]
        if attempt(
            "add_memory",
            memory.add_memory,
            f"{me} remembers item {i}: pizza, walks and sourdough",
            memory_type="memory",
            user_id=USER_ID,
            memory_id=record,
            memory_id_to_link=root,
            link_type=link_type,
            link_id=f"{record}-l",
        ):
            acked["records"].append(record)
            acked["links"].append([f"{record}-l", record, root, link_type])
            if previous is not None:
                second = LINK_TYPES[(process + 2 * thread + i + 1) % len(LINK_TYPES)]
                if attempt(
                    "link_records",
                    memory.link_records,
                    record,
                    "memory",
                    previous,
                    "memory",
                    second,
                    relation_id=f"{record}-p",
                ):
                    acked["links"].append([f"{record}-p", record, previous, second])
            previous = record
        attempt("search", memory.search, "pizza sourdough", user_id=USER_ID, max_results=5, num_hops=1)


def main() -> None:
    spec, process, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    out: dict[str, Any] = {}
    memory = open_client(  # the composition root opens the store and closes it with the client
        build_container(
            location(spec),
            overrides={
                "embedder": HashingEmbedder(),
                "summariser": None,
                "extractor": None,
                "link_resolver": None,
                "memory_extraction_config": MemoryExtractionConfig(extract_memories=False),
            },
        )
    )
    workers = [
        threading.Thread(target=run_thread, args=(memory, process, t, rounds, out), name=f"writer-{t}")
        for t in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    memory.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
