"""Benchmarks: command-line entry points whose sizes are arguments (``python -m attnpaths.benchmarks.<name>``).

They need the test-only dependency ``pyro-ppl`` (imported lazily, so the library does not depend on it).
"""
