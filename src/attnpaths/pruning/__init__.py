"""Theory-guided head pruning of trained models, against the rankings practitioners use (the ``pruning`` chapter).

The task is :mod:`.digits`, the models are trained by :mod:`.training` (the architectures are the core's,
:mod:`attnpaths.attention_stack` and :mod:`attnpaths.transformer`); the paper's head score is
:func:`attnpaths.frozen_attention.rank_heads`, the other theory scores :mod:`.theory_scores`, the practical
rankings :mod:`attnpaths.experiments.head_rankings` and :mod:`.practical`. :mod:`.masked_outputs` and :mod:`.exact` evaluate every set of
pruned heads, :mod:`.sweep` prunes along every ranking over training seeds, :mod:`.claims` and :mod:`.plots`
are the chapter's tests and figures.
"""

from ..experiments.head_rankings import attention_entropy, gradient_head_importance, value_norms

__all__ = ["attention_entropy", "gradient_head_importance", "value_norms"]
