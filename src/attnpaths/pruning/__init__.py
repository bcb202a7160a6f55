"""Theory-guided head pruning of trained models, against the rankings practitioners use (the ``pruning`` chapter).

Modules, one job each:

* :mod:`.models`      a plain stack of ``torch.nn.MultiheadAttention`` layers (sec-pruning-models);
* :mod:`.adapters`    frozen float64 views of a trained model (that stack, or the package's
  :class:`~attnpaths.transformer.SumHeadTransformer`): its attention matrices exactly as it computes them,
  its head-masked output, its heads' value maps;
* :mod:`.rankings`    head rankings: the paper's head score of the frozen-attention network
  (:func:`theory_head_ranking`, eq-head-score), the gradient importance of Michel, Levy and Neubig (2019),
  attention entropy and value-weight norm (sec-pruning-rankings);
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

from .adapters import HeadModel, head_model, pruning_mask
from .models import MultiheadAttentionStack
from .rankings import (TheoryRanking, attention_entropy, gradient_head_importance, pruning_order,
                       theory_head_ranking, value_norms)

__all__ = ["HeadModel", "MultiheadAttentionStack", "TheoryRanking", "attention_entropy", "gradient_head_importance",
           "head_model", "pruning_mask", "pruning_order", "theory_head_ranking", "value_norms"]
