"""attnpaths: the reproducible companion to "Dissecting the Interplay of Attention Paths in a Statistical
Mechanics Theory of Transformers" (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024).

Layout mirrors the theory: ``attention`` -> ``paths`` -> ``kernels`` -> ``action`` -> ``theory``
(solver, predictor, head scores); ``network`` -> ``sampler``; the experiment layer in ``experiments``; the
tasks in ``hmc`` and ``oneshot``; the second paper in ``exchangeability`` and related results in ``related``;
the book machinery in ``book``.
"""

__version__ = "0.1.0"
