"""Where each one-shot claim comes from (the ``source`` of its verdict), and the two claims on the interplay of paths."""

SOURCE_PRUNING = "paper (abstract; captions of Fig. 3e, 3f)"
SOURCE_PATTERN = "paper (abstract; Fig. 3c)"
SOURCE_INTERPLAY = "paper (abstract: the interplay of attention paths)"
#: The tests that the paper does not state: this book's reading of a claim, or a control of it.
SOURCE_SAME_PATH = "derived in this book (what the same-path weights of U add on their own)"
SOURCE_BEST_SET = "derived in this book (the score order against the best set of heads of the same size)"
SOURCE_LITTLE_LOSS = "derived in this book (a loss within a margin fixed before measuring)"
SOURCE_ENTROPY_WEIGHT = "derived in this book (the entropy weight of the action, measured by the samples)"
SOURCE_FINITE_WIDTH_TRANSFER = "derived in this book (is the transferred pattern that of finite width?)"


#: Claims I and Iw (sec-oneshot-interplay): the claim's suffix, the predictor and its reference (keys of the
#: ablation means), the statement, the source and the names of the two accuracies (``{n}``: the width).
INTERPLAY = (
    (
        "",
        "theory",
        "diagonal",
        "the cross-path weights of U add accuracy",
        SOURCE_INTERPLAY,
        ("A(U, N={n})", "A(diag U)"),
    ),
    (
        "w",
        "diagonal",
        "gp",
        "the same-path weights of U alone beat the GP limit",
        SOURCE_SAME_PATH,
        ("A(diag U, N={n})", "A_GP"),
    ),
)
