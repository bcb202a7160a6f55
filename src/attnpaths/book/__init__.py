"""The machinery behind the command line (:mod:`attnpaths.cli`): it executes the book's chapters with
papermill and builds the HTML book from the executed notebooks.

Modules, one job each:

- :mod:`~attnpaths.book.layout`: where everything lives (``_toc.yml``, ``book/``, ``_build/...``);
- :mod:`~attnpaths.book.chapters`: the chapter list from ``_toc.yml``, each chapter's profiles and
  ``parameters`` cell, validation of parameter overrides;
- :mod:`~attnpaths.book.cache`: the cache key of an executed chapter (chapter source, the package code it
  executes, parameters, library versions);
- :mod:`~attnpaths.book.executor`: runs one chapter with papermill in a worker process (atomic outputs,
  wall time and peak memory, failing cell reported);
- :mod:`~attnpaths.book.runner`: runs what is stale, in the order of the table of contents, and records
  timings;
- :mod:`~attnpaths.book.site`: assembles the Sphinx source from the executed notebooks and builds the HTML;
- :mod:`~attnpaths.book.baselines`: the nbval regression baselines under ``tests/baselines``;
- :mod:`~attnpaths.book.local_mathjax`: Sphinx extension serving MathJax from the build (no network).

Version and environment provenance (of cache keys and paper records) comes from :mod:`attnpaths.provenance`.
"""
