"""Extraction benchmark: the memories extracted from LoCoMo's sessions against their gold observations.

Run from the repository root (the data file is not in the repository: see the README):

    python -m benchmarks.extraction --data benchmarks/locomo/data/locomo10.json
    python -m benchmarks.extraction --data PATH --json out.json       # every figure, per session too
    python -m benchmarks.extraction --data PATH --model-url http://127.0.0.1:8000/v1 --model NAME

The development half only (conv-26, -30, -41, -42, -43), through ``benchmarks.locomo``'s loader,
which never reads the held-out conversations. The procedure is fixed so that figures compare:
each session goes into a fresh thread of its own user through one ``add_messages`` call, every
turn a "user" message whose content is the turn's text and whose ``name`` is its speaker, with
the default configuration otherwise (``--model-url``/``--model``: the LLM extractor on that
OpenAI-compatible server instead of the heuristic one); then ``wait_for_memory_extraction()``;
the session's memories (``list_memories`` of that user) are scored against the session's gold
observations (speaker names as written).

A gold fact is *recalled* when some memory's MiniLM cosine with it is at least 0.70; a memory
is *precise* when its cosine with some gold fact of its session is at least 0.70. The
content-word overlap matcher is reported beside it (a gold fact is covered when at least half
of its content-word stems are in one memory; a memory is precise when at least half of its
are in one gold fact). Latencies are steadier with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.extraction`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.extraction"

import numpy as np
from palimpsest.adapters import open_memory
from palimpsest.adapters.heuristic._text import FUNCTION_WORDS, stem
from palimpsest.application import AgentMemory
from palimpsest.domain.text import word_tokens

from benchmarks.locomo.loader import DEV_CONVERSATIONS, DOWNLOAD_HINT, Conversation, Observation, Turn, load
from benchmarks.quality.common import chosen_embedder

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent / "locomo" / "data" / "locomo10.json"
DEFAULT_CACHE = HERE.parent / "locomo" / ".cache"
COSINE_THRESHOLD = 0.70
OVERLAP_THRESHOLD = 0.5
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
KINDS: dict[str, tuple[str, ...]] = {
    "evidence": ("own turn", "partner's turn", "several turns", "no turn"),
    "turn": ("text", "image"),
    "speaker": ("speaker_a", "speaker_b", "other"),
}
"""How a gold fact is classified (recall is reported per kind): ``evidence`` by whose turn it
was taken from (the fact's speaker's own, the partner's, several turns, none that survived
repair); ``turn`` whether an evidence turn shared an image (its caption is not in the text);
``speaker`` the fact's speaker as the conversation's first or second speaker."""


# -- matching -----------------------------------------------------------------------------------


def content_stems(text: str) -> frozenset[str]:
    """The content words of ``text`` (function words dropped), stemmed."""
    return frozenset(stem(t) for t in word_tokens(text) if t not in FUNCTION_WORDS and len(t) > 1)


def cosine_matrix(gold: Sequence[Sequence[float]], found: Sequence[Sequence[float]]) -> np.ndarray:
    """Cosines, one row per gold fact, one column per memory (vectors normalised here)."""
    if not gold or not found:
        return np.zeros((len(gold), len(found)), dtype=np.float32)
    a = np.asarray(gold, dtype=np.float32)
    b = np.asarray(found, dtype=np.float32)
    a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.asarray(a @ b.T)


def overlap_matrix(gold: Sequence[str], found: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The share of each gold fact's content stems in each memory (rows gold, columns memories),
    and the share of each memory's stems in each gold fact (same shape)."""
    gold_stems = [content_stems(t) for t in gold]
    found_stems = [content_stems(t) for t in found]
    covered = np.zeros((len(gold), len(found)), dtype=np.float32)
    contained = np.zeros((len(gold), len(found)), dtype=np.float32)
    for i, g in enumerate(gold_stems):
        for j, m in enumerate(found_stems):
            shared = len(g & m)
            covered[i, j] = shared / len(g) if g else 0.0
            contained[i, j] = shared / len(m) if m else 0.0
    return covered, contained


def fact_kinds(fact: Observation, turns: Mapping[str, Turn], conversation: Conversation) -> dict[str, str]:
    evidence = [turns[d] for d in fact.evidence if d in turns]
    if not evidence:
        origin = "no turn"
    elif len(evidence) > 1:
        origin = "several turns"
    else:
        origin = "own turn" if evidence[0].speaker == fact.speaker else "partner's turn"
    slot = (
        "speaker_a"
        if fact.speaker == conversation.speaker_a
        else "speaker_b"
        if fact.speaker == conversation.speaker_b
        else "other"
    )
    return {
        "evidence": origin,
        "turn": "image" if any(t.caption for t in evidence) else "text",
        "speaker": slot,
    }


# -- one session --------------------------------------------------------------------------------


def ingest_session(
    memory: AgentMemory, conversation: Conversation, session: int, turns: Sequence[Turn]
) -> tuple[list[str], float, int]:
    """The session in a fresh thread of its own user; the memories' texts, the seconds from
    the ``add_messages`` call until extraction finished, and the thread's failed extraction jobs."""
    user_id = f"extraction-{conversation.sample_id}-s{session}"
    thread = memory.create_thread(user_id=user_id, agent_id="extraction")
    started = time.perf_counter()
    thread.add_messages(
        [{"role": "user", "content": t.text, "name": t.speaker, "timestamp": t.session_date} for t in turns]
    )
    thread.wait_for_memory_extraction(timeout=None)
    seconds = time.perf_counter() - started
    failed = len(memory.failed_extractions(thread.thread_id))
    return [m.content for m in memory.list_memories(user_id=user_id)], seconds, failed


def score_session(
    gold: Sequence[str], found: Sequence[str], embedder: Any
) -> dict[str, Any]:
    """Per gold fact: recalled (cosine, overlap); per memory: precise (cosine, overlap)."""
    vectors = embedder.embed([*gold, *found]) if gold or found else []
    cosines = cosine_matrix(vectors[: len(gold)], vectors[len(gold) :])
    covered, contained = overlap_matrix(gold, found)
    return {
        "gold_recalled": [bool(found) and bool(cosines[i].max() >= COSINE_THRESHOLD) for i in range(len(gold))],
        "gold_best_cosine": [round(float(cosines[i].max()), 4) if found else 0.0 for i in range(len(gold))],
        "gold_covered": [bool(found) and bool(covered[i].max() >= OVERLAP_THRESHOLD) for i in range(len(gold))],
        "memory_precise": [bool(gold) and bool(cosines[:, j].max() >= COSINE_THRESHOLD) for j in range(len(found))],
        "memory_contained": [
            bool(gold) and bool(contained[:, j].max() >= OVERLAP_THRESHOLD) for j in range(len(found))
        ],
    }


# -- figures ------------------------------------------------------------------------------------


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def summarise(sessions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Micro-averaged figures over ``sessions`` (every gold fact and memory counts once)."""
    gold = [f for s in sessions for f in s["facts"]]
    found = [m for s in sessions for m in s["memories"]]
    messages = sum(s["messages"] for s in sessions)
    seconds = sum(s["seconds"] for s in sessions)
    by_kind: dict[str, dict[str, Any]] = {}
    for dimension, names in KINDS.items():
        by_kind[dimension] = {}
        for name in names:
            subset = [f for f in gold if f["kind"][dimension] == name]
            if subset:
                by_kind[dimension][name] = {
                    "facts": len(subset),
                    "recall": _share([f["recalled"] for f in subset]),
                    "recall_overlap": _share([f["covered"] for f in subset]),
                }
    return {
        "sessions": len(sessions),
        "messages": messages,
        "gold_facts": len(gold),
        "memories": len(found),
        "memories_per_session": round(len(found) / len(sessions), 2) if sessions else None,
        "recall": _share([f["recalled"] for f in gold]),
        "precision": _share([m["precise"] for m in found]),
        "recall_overlap": _share([f["covered"] for f in gold]),
        "precision_overlap": _share([m["contained"] for m in found]),
        "messages_per_second": round(messages / seconds, 1) if seconds else None,
        "failed_extractions": sum(s["failed_extractions"] for s in sessions),
        "by_kind": by_kind,
    }


@contextmanager
def fresh_client(store_embedder: Any, extractor: Any, backend: str) -> Iterator[AgentMemory]:
    """The default client on a fresh store (only the embedder given, for its cache; the extractor
    when a model server is named)."""
    with tempfile.TemporaryDirectory(prefix="palimpsest-extraction-") as folder:
        path = Path(folder) / "memory.db" if backend == "embedded" else None
        options: dict[str, Any] = {"extractor": extractor} if extractor is not None else {}
        with open_memory(path, backend=backend, embedder=store_embedder, **options) as memory:
            yield memory


def evaluate(
    conversations: Sequence[Conversation],
    store_embedder: Any,
    scorer: Any,
    *,
    extractor: Any = None,
    backend: str = "embedded",
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Every session of ``conversations`` ingested and scored; figures per conversation and overall."""
    all_sessions: list[dict[str, Any]] = []
    by_conversation: dict[str, Any] = {}
    for conversation in conversations:
        turns_by_id = {t.dia_id: t for t in conversation.turns}
        sessions: dict[int, list[Turn]] = {}
        for turn in conversation.turns:
            sessions.setdefault(turn.session, []).append(turn)
        observed: dict[int, list[Observation]] = {}
        for fact in conversation.observations:
            observed.setdefault(fact.session, []).append(fact)
        rows: list[dict[str, Any]] = []
        with fresh_client(store_embedder, extractor, backend) as memory:
            for number in sorted(sessions):
                facts = observed.get(number, [])
                found, seconds, failed = ingest_session(memory, conversation, number, sessions[number])
                scored = score_session([f.text for f in facts], found, scorer)
                rows.append(
                    {
                        "conversation": conversation.sample_id,
                        "session": number,
                        "messages": len(sessions[number]),
                        "seconds": round(seconds, 4),
                        "failed_extractions": failed,
                        "facts": [
                            {
                                "speaker": f.speaker,
                                "text": f.text,
                                "evidence": list(f.evidence),
                                "kind": fact_kinds(f, turns_by_id, conversation),
                                "recalled": scored["gold_recalled"][i],
                                "covered": scored["gold_covered"][i],
                                "best_cosine": scored["gold_best_cosine"][i],
                            }
                            for i, f in enumerate(facts)
                        ],
                        "memories": [
                            {"text": text, "precise": scored["memory_precise"][j], "contained": scored["memory_contained"][j]}
                            for j, text in enumerate(found)
                        ],
                    }
                )
        by_conversation[conversation.sample_id] = summarise(rows)
        log(f"{conversation.sample_id}: {by_conversation[conversation.sample_id]['recall']} recall, "
            f"{by_conversation[conversation.sample_id]['precision']} precision")
        all_sessions.extend(rows)
    return {"overall": summarise(all_sessions), "by_conversation": by_conversation, "sessions": all_sessions}


# -- report -------------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def report(result: Mapping[str, Any]) -> str:
    headers = ("", "sessions", "msgs", "gold", "memories", "mem/session", "recall", "precision",
               "recall (overlap)", "precision (overlap)", "msgs/s", "failed jobs")
    rows = []
    for name, figures in [*result["by_conversation"].items(), ("overall", result["overall"])]:
        rows.append((name, figures["sessions"], figures["messages"], figures["gold_facts"], figures["memories"],
                     _f(figures["memories_per_session"], 2), _f(figures["recall"]), _f(figures["precision"]),
                     _f(figures["recall_overlap"]), _f(figures["precision_overlap"]),
                     _f(figures["messages_per_second"], 1), figures["failed_extractions"]))
    lines = [_table(headers, rows), "", "Recall per kind of gold fact (cosine / overlap):"]
    kind_rows = []
    for dimension, kinds in result["overall"]["by_kind"].items():
        for name, figures in kinds.items():
            kind_rows.append((dimension, name, figures["facts"], _f(figures["recall"]), _f(figures["recall_overlap"])))
    lines.append(_table(("kind", "", "facts", "recall", "recall (overlap)"), kind_rows))
    return "\n".join(lines)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells[1:]]
    return "\n".join(out)


# -- command line -------------------------------------------------------------------------------


def model_extractor(url: str, model: str) -> Any:
    """The LLM extractor on the OpenAI-compatible server at ``url`` (``OPENAI_API_KEY`` when set,
    else a placeholder: local servers accept any)."""
    import openai
    from palimpsest.adapters.openai import LlmExtractor, OpenAIChatModel

    client = openai.OpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY") or "not-needed")
    return LlmExtractor(OpenAIChatModel(client, model))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.extraction", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default {DEFAULT_DATA})")
    parser.add_argument("--conversation", action="append", choices=DEV_CONVERSATIONS,
                        help="a development conversation (repeatable; default all five)")
    parser.add_argument("--json", metavar="PATH", help="write every figure as JSON to PATH ('-' for standard output)")
    parser.add_argument("--model-url", help="an OpenAI-compatible server's base URL: the LLM extractor on it")
    parser.add_argument("--model", help="the chat model's name on --model-url")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache folder (shared with benchmarks.locomo)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm",
                        help="hashing: fast smoke runs, no quality figures")
    parser.add_argument("--backend", choices=("embedded", "memory"), default="embedded", help="store (default embedded)")
    args = parser.parse_args(argv)
    if (args.model_url is None) != (args.model is None):
        parser.error("--model-url and --model go together")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        conversations = load(args.data, tuple(args.conversation or DEV_CONVERSATIONS))
    except FileNotFoundError:
        print(f"LoCoMo data not found at {args.data}: {DOWNLOAD_HINT}", file=sys.stderr)
        return 2
    embedder = chosen_embedder(args.embedder, None if args.no_cache else args.cache)
    extractor = model_extractor(args.model_url, args.model) if args.model_url else None
    facts = sum(len(c.observations) for c in conversations)
    print(f"LoCoMo dev half: {', '.join(c.sample_id for c in conversations)}; {facts} gold observations")
    started = time.perf_counter()
    result = evaluate(conversations, embedder, embedder, extractor=extractor, backend=args.backend,
                      log=lambda line: print(line, file=sys.stderr))
    embedder.save()
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["embedder"] = embedder.model_id
    result["vectors_computed"] = embedder.computed
    result["extractor"] = f"llm {args.model} at {args.model_url}" if args.model_url else "default (heuristic)"
    result["thresholds"] = {"cosine": COSINE_THRESHOLD, "overlap": OVERLAP_THRESHOLD}
    result["blas_threads"] = {v: os.environ.get(v) for v in BLAS_THREAD_VARIABLES}
    print(report(result))
    print(f"({result['seconds']} s; extractor {result['extractor']}; embedder {result['embedder']}, "
          f"{result['vectors_computed']} vectors computed)")
    if args.json:
        text = json.dumps(result, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text, encoding="utf-8")
    return 0


__all__ = ["content_stems", "evaluate", "main", "report", "score_session", "summarise"]
