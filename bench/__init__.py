"""Benchmarks (quality and speed); not tests."""
