"""Benchmarks: command-line entry points whose sizes are arguments (``python -m attnpaths_book.benchmarks.<name>``).

They need the test-only dependency ``pyro-ppl``, and ``numpyro_nuts`` the optional ``bench`` extra (jax, numpyro:
``pip install -e ".[bench]"``); all are imported lazily, so the library does not depend on them.
"""
