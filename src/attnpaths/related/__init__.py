"""Related results of other papers on attention (R1-R5), companion code for the book chapter ``related``.

The tags [SRC], [SRC-2] and [DERIVED] are those of the chapter; every concrete construction here is ours.

Modules, one job each:

* :mod:`.rank_collapse`      R1, rank collapse of pure self-attention and skip connections;
* :mod:`.lipschitz`          R2-R3, growth of the Jacobian of self-attention with the input scale and the
  number of tokens;
* :mod:`.measures`           R4, attention as a map of measures, Lipschitz in the Wasserstein-1 distance;
* :mod:`.bayesian_attention` R5, attention as posterior inference over positions;
* :mod:`.claims`             the chapter's claims as statistical tests (:class:`attnpaths.claims.Verdict`);
* :mod:`.plots`              the chapter's figures, one per result.
"""
