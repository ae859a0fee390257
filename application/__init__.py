"""Application layer of palimpsest: use cases and the public client API (built on domain ports)."""
