"""Theory-guided head pruning of trained models, against the rankings practitioners use (the ``pruning`` chapter).

Modules, one job each:

* :mod:`.rankings`    the practitioners' head rankings: the gradient importance of Michel, Levy and Neubig (2019),
  attention entropy and value-weight norm (sec-pruning-rankings); the paper's head score is
  :func:`attnpaths.frozen_attention.rank_heads`, and the models are the core's (:mod:`attnpaths.attention_stack`,
  :mod:`attnpaths.head_models`);
* :mod:`.masked_outputs` many head masks of a model evaluated at once (every subset, every path);
* :mod:`.theory_scores` theory scores that measure what pruning removes: the removal score, the change of the
  minimal action and its gate gradient, the leave-one-out change, the paper's score of the trained path weights
  (sec-pruning-theory-scores);
* :mod:`.practical`   the gradient importance re-estimated after each removal, and the joint gate-Fisher search
  (Kwon et al. 2022);
* :mod:`.exact`       every subset of a model's heads evaluated once (sec-pruning-exact);
* :mod:`.digits`      scikit-learn's 8x8 digits as sequences of patch tokens, a binary task (sec-pruning-task);
* :mod:`.training`    Adam training of either model from one seed, on the CPU or a GPU;
* :mod:`.sweep`       pruning curves, their areas, one engine task per training seed (sec-pruning-curves);
* :mod:`.claims`      the comparisons of the theory's ranking with the others, as verdicts;
* :mod:`.plots`       the chapter's figures.
"""

from .rankings import attention_entropy, gradient_head_importance, value_norms

__all__ = ["attention_entropy", "gradient_head_importance", "value_norms"]
