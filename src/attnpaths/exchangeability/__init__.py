"""Attention through the lens of exchangeability and latent-variable models.

Companion code for the book chapter ``exchangeability`` (Zhang, Liu, Cai, Wang, Wang, arXiv:2212.14852).
References in parentheses, such as (ex-mse) or (sec-e2), are the chapter's equation labels and section
targets; the tags [SRC], [SRC-2] and [DERIVED] are those of the chapter: only the abstract of arXiv:2212.14852
could be checked, so every concrete rate, parameter and objective here is a derivation of ours, not the
paper's theorem.

The latent models (M1)-(M4) are :mod:`.latent_models`, attention as an estimator :mod:`.estimators`, the
experiments E1-E4 :mod:`.representation`, :mod:`.convergence`, :mod:`.erm` and :mod:`.transfer`, their claims
:mod:`.claims` and figures :mod:`.plots`.
"""
