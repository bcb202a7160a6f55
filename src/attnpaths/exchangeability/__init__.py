"""Attention through the lens of exchangeability and latent-variable models, and related attention theory.

Companion code for the book chapters ``exchangeability`` (Zhang, Liu, Cai, Wang, Wang, arXiv:2212.14852) and
``related`` (results R1-R5 of other papers). References in parentheses, such as (ex-mse), (rel-bayes) or
(sec-r3), are the chapters' equation labels and section targets; the tags [SRC], [SRC-2] and [DERIVED] are
those of the chapters: only the abstract of arXiv:2212.14852 could be checked, so every concrete rate,
parameter and objective here is a derivation of ours, not the paper's theorem.

Modules, one job each:

* :mod:`.estimators`   attention as an estimator of ``E[v | k = q, z]`` (bilinear softmax attention, Gaussian
  kernel smoothing, kernel conditional-mean (CME) attention) and the derived large-L error formula;
* :mod:`.latent_models` the generative models (M1)-(M4) and their closed-form posteriors;
* :mod:`.representation` E1, the posterior as a sufficient, minimal, order-free representation;
* :mod:`.convergence`  E2, convergence of attention in the sequence length, temperature and bandwidth;
* :mod:`.erm`          E3, empirical risk minimisation of the attention parameter (supervised and masked);
* :mod:`.transfer`     E4, masked pretraining to downstream regression: a condition-number proxy;
* :mod:`.rank_collapse` R1, :mod:`.lipschitz` R2-R3, :mod:`.measures` R4, :mod:`.bayesian_attention` R5;
* :mod:`.fitting`      log-log slopes, with standard errors from the covariance of the fitted points;
* :mod:`.verdicts`     the chapters' claims as statistical tests (:class:`attnpaths.claims.Verdict`).
"""
