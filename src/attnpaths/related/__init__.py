"""Related results of other papers on attention (R1-R5), companion code for the book chapter ``related``.

The tags [SRC], [SRC-2] and [DERIVED] are those of the chapter; every concrete construction here is ours: rank
collapse (R1, :mod:`.rank_collapse`), the Lipschitz growth of self-attention (R2-R3, :mod:`.lipschitz`),
attention on measures (R4, :mod:`.measures`) and attention as inference over positions (R5,
:mod:`.bayesian_attention`), with the chapter's claims (:mod:`.claims`) and figures (:mod:`.plots`).
"""
