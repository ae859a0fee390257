"""LoCoMo retrieval benchmark (development half only): ``python -m benchmarks.locomo --data PATH``."""
