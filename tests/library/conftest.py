"""The library's tests: everything that ``pip install .`` (without the book extra) can run, importing nothing of the
book's companion (``tests/test_layering.py`` and CI's library step check it). This folder is on ``sys.path``
for its modules' ``from helpers import ...``; the shared fixtures are in ``tests/conftest.py``."""
