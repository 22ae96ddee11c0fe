"""Recall stages: pure functions over candidate lists, above the storage layer."""
