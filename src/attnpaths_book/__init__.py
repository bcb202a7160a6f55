"""attnpaths_book: the companion of the ``attnpaths`` library that executes the book's chapters with
papermill, builds the HTML book from the executed notebooks, keeps its regression baselines and paper records,
runs the benchmarks and ships the trained weights. It imports the library; the library never imports it.

Command line: ``attnpaths COMMAND`` (console script) or ``python -m attnpaths_book COMMAND`` (:mod:`.cli`).

Modules, one job each:

- :mod:`~attnpaths_book.layout`: where everything lives (``_toc.yml``, ``book/``, ``_build/...``);
- :mod:`~attnpaths_book.chapters`: the chapter list from ``_toc.yml``, each chapter's profiles and
  ``parameters`` cell, validation of parameter overrides;
- :mod:`~attnpaths_book.cache`: the cache key of an executed chapter (chapter source, the package code it
  executes, parameters, library versions);
- :mod:`~attnpaths_book.executor`, :mod:`~attnpaths_book.worker`: run one chapter with papermill in a worker
  process (atomic outputs, wall time and peak memory, failing cell reported);
- :mod:`~attnpaths_book.runner`: runs what is stale, in the order of the table of contents, and records
  timings;
- :mod:`~attnpaths_book.recorder`: what a chapter's cells use to glue numbers and write its results file;
- :mod:`~attnpaths_book.report`, :mod:`~attnpaths_book.benchmark_plots`: the reproducibility chapter's tables
  and figures;
- :mod:`~attnpaths_book.site`, :mod:`~attnpaths_book.api_docs`, :mod:`~attnpaths_book.local_mathjax`:
  assemble the Sphinx source from the executed notebooks and build the HTML;
- :mod:`~attnpaths_book.explorable`, :mod:`~attnpaths_book.local_bokeh`: the HTML book's interactive figures
  (standalone Bokeh documents over the chapters' recorded numbers) and the BokehJS they load from ``_static``;
- :mod:`~attnpaths_book.baselines`, :mod:`~attnpaths_book.paper_records`, :mod:`~attnpaths_book.numeric_diff`,
  :mod:`~attnpaths_book.tolerances`: the nbval baselines, the paper records and how numbers are compared;
- :mod:`~attnpaths_book.trained`: the shipped trained weights;
- :mod:`~attnpaths_book.benchmarks`: the benchmarks (``attnpaths bench NAME``).
- :mod:`~attnpaths_book.launcher`: the console script ``attnpaths``, which says in one line what to install
  where the ``book`` extra is missing.

Version and environment provenance (of cache keys and paper records) comes from :mod:`attnpaths_book.provenance`.
"""
