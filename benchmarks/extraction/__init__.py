"""Extraction benchmark on LoCoMo's gold observations (development half)."""
