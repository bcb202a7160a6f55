"""Attention through the lens of exchangeability and latent-variable models.

Companion code for the book chapter ``exchangeability`` (Zhang, Liu, Cai, Wang, Wang, arXiv:2212.14852).
References in parentheses, such as (ex-mse) or (sec-e2), are the chapter's equation labels and section
targets; the tags [SRC], [SRC-2] and [DERIVED] are those of the chapter: only the abstract of arXiv:2212.14852
could be checked, so every concrete rate, parameter and objective here is a derivation of ours, not the
paper's theorem.

Modules, one job each:

* :mod:`.estimators`   attention as an estimator of ``E[v | k = q, z]``: the derived large-L error formula and
  the prefix read-outs of the experiments (the operators themselves, bilinear softmax attention, Gaussian kernel
  smoothing and kernel conditional-mean (CME) attention, are :mod:`attnpaths.attention_operators`);
* :mod:`.latent_models` the generative models (M1)-(M4) and their closed-form posteriors;
* :mod:`.representation` E1, the posterior as a sufficient, minimal, order-free representation;
* :mod:`.convergence`  E2, convergence of attention in the sequence length, temperature and bandwidth;
* :mod:`.erm`          E3, empirical risk minimisation of the attention parameter (supervised and masked);
* :mod:`.transfer`     E4, masked pretraining to downstream regression: a condition-number proxy;
* one BLAS thread for the many small factorisations of the experiments: :func:`attnpaths.engine.single_threaded`
  (``blas_only=True``);
* :mod:`.claims`       the chapter's claims as statistical tests (:class:`attnpaths.claims.Verdict`).

Log-log slopes with their standard errors come from :mod:`attnpaths.statistics`.
"""
