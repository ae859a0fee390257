"""Reliability helper, run as a child process: writes the crash plan's batches until killed.

    python crash_writer.py STORE FIRST_BATCH [LAST_BATCH]

``STORE`` is a store spec (``reliability_stores``: a file path or a PostgreSQL URL and store id).

Each batch is one public call (see ``crash_batches``); ``ACK n`` is printed and flushed only
after that call returned, so every acknowledged batch must survive a SIGKILL at any moment.
The threads must exist already (the parent creates them).
"""

from __future__ import annotations

import sys

from crash_batches import USER_ID, batch, content
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from reliability_stores import location

NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


def write(memory: AgentMemory, n: int) -> None:
    plan = batch(n)
    if plan.kind == "messages":
        assert plan.thread_id is not None
        thread = memory.get_thread(plan.thread_id)
        thread.add_messages(
            [
                {"role": "user" if i % 2 == 0 else "assistant", "content": content(mid), "id": mid}
                for i, mid in enumerate(plan.message_ids)
            ]
        )
    elif plan.kind == "memory":
        assert plan.record_id is not None
        link = {}
        if plan.link_id is not None:
            link = {
                "memory_id_to_link": plan.link_target,
                "link_type": plan.link_type,
                "link_id": plan.link_id,
            }
        memory.add_memory(
            content(plan.record_id),
            memory_type=plan.memory_type,
            user_id=USER_ID,
            memory_id=plan.record_id,
            **link,
        )
    else:
        assert plan.link_source is not None and plan.link_target is not None
        memory.link_records(
            plan.link_source,
            batch(int(plan.link_source[1:])).memory_type,
            plan.link_target,
            batch(int(plan.link_target[1:])).memory_type,
            plan.link_type,
            relation_id=plan.link_id,
        )


def main() -> None:
    spec, first = sys.argv[1], int(sys.argv[2])
    last = int(sys.argv[3]) if len(sys.argv) > 3 else None
    memory = open_client(  # the composition root opens the store and closes it with the client
        build_container(
            location(spec),
            overrides={
                "embedder": HashingEmbedder(),
                "summariser": None,
                "extractor": None,
                "link_resolver": None,
                "memory_extraction_config": NO_EXTRACTION,
            },
        )
    )
    print("READY", flush=True)
    n = first
    while last is None or n <= last:
        write(memory, n)
        print(f"ACK {n}", flush=True)
        n += 1
    memory.close()


if __name__ == "__main__":
    main()
