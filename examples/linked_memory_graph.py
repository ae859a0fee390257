"""Seed 004, "Create and search linked memory graphs", run offline on palimpsest.

The body of :func:`main` is the seed's complete code listing. Only the imports and the
client construction differ: instead of an Oracle connection pool and a remote embedding
model, ``open_memory`` opens the embedded store in a folder of your choice with the offline
defaults (the MiniLM embedder when its weights are installed), and extraction is off as in
the seed. There is no model, so ``add_memory`` links nothing on its own: the links are the
ones the listing creates.

Run it with ``python examples/linked_memory_graph.py`` (a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from palimpsest.adapters import open_memory
from palimpsest.application import MemoryExtractionConfig, OracleSearchResultFormatConfig


def main(folder: str | Path) -> dict[str, Any]:
    """Run the listing against a store in ``folder``; returns the listing's variables.

    The caller owns the client: close it with ``names["memory"].close()``."""
    ##Create a graph memory client

    memory = open_memory(
        Path(folder) / "graph-memory.db",
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    user_id = "graph-demo-user"

    ##Create linked memories

    thin_crust_id = memory.add_memory(
        "The user's preferred pizza style is thin crust.",
        memory_id="pizza-thin-crust",
        memory_type="preference",
        user_id=user_id,
    )
    sourdough_id = memory.add_memory(
        "The user now prefers sourdough pizza.",
        memory_id="pizza-sourdough",
        memory_type="preference",
        user_id=user_id,
    )
    neapolitan_id = memory.add_memory(
        "The user's preferred pizza style is sourdough, especially Neapolitan sourdough.",
        memory_id="pizza-neapolitan-sourdough",
        memory_type="preference",
        user_id=user_id,
    )

    supersedes_link_id = memory.link_records(
        source_record_id=sourdough_id,
        source_record_type="preference",
        target_record_id=thin_crust_id,
        target_record_type="preference",
        relation_type="supersedes",
    )
    memory.link_records(
        source_record_id=neapolitan_id,
        source_record_type="preference",
        target_record_id=sourdough_id,
        target_record_type="preference",
        relation_type="refines",
    )

    ##Edit and delete links

    # Changing a lifecycle link recalculates the status of both endpoint memories.
    memory.update_record_link(
        supersedes_link_id,
        relation_type="supports",
        metadata={"reviewed_by": "preference-service"},
    )

    # Delete by the stable relation ID.
    memory.delete_record_link(relation_id=supersedes_link_id)

    # Or delete by the complete directed relation triple.
    memory.delete_record_link(
        source_record_id=neapolitan_id,
        source_record_type="preference",
        target_record_id=sourdough_id,
        target_record_type="preference",
        relation_type="refines",
    )

    # Recreate the example links for the search example.
    memory.link_records(sourdough_id, "preference", thin_crust_id, "preference", "supersedes")
    memory.link_records(neapolitan_id, "preference", sourdough_id, "preference", "refines")

    ##Search linked memories

    results = memory.search(
        "What pizza should I recommend?",
        user_id=user_id,
        max_results=5,
        num_hops=2,
        max_linked_results=20,
        include_invalid_results=False,
    )

    ##Format graph context for a prompt

    format_config = OracleSearchResultFormatConfig(
        include_invalid_results=True,
        show_timestamp=False,
        show_role=False,
        show_status=False,
    )
    for result in results:
        print(result.format_content(format_config))

    return locals()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        names = main(folder)
        names["memory"].close()
