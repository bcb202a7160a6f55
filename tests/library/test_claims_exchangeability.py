"""Power tests of the claims of the chapter ``exchangeability`` (E1-E4).

For every claim, the check function that the chapter calls is run twice: on a small correct input, where it
must not come out contradicted, and on a deliberately wrong input (a wrong closed form, a wrong exponent, an
estimator replaced by a worse one, reversed labels), where it must come out contradicted.
"""

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.exchangeability import claims as V
from attnpaths.exchangeability.convergence import (
    attention_error_vs_length,
    bandwidth_experiment,
    cme_vs_softmax_experiment,
)
from attnpaths.exchangeability.erm import (
    approximation_terms,
    attention_risk,
    erm_experiment,
    sample_task,
)
from attnpaths.exchangeability.estimators import predicted_attention_mse
from attnpaths.exchangeability.latent_models import concept_posterior, random_concept_means, sample_concept_tokens
from attnpaths.exchangeability.representation import gaussian_representation_experiment, gaussian_risk_theory
from attnpaths.exchangeability.transfer import transfer_experiment

CONTRADICTED = Outcome.CONTRADICTED
SIGMA = np.array([[1.0, 0.3], [0.3, 0.5]])
INV = np.linalg.inv(SIGMA)
QUERY = np.array([0.5, -0.3])
M3 = dict(key_cov=SIGMA, query=QUERY, value_noise=0.5)
U = (1.0, -1.0, 0.5, 0.0)


def _rng(seed):
    return np.random.default_rng([seed, 77])


def _ok(v):
    assert v.outcome is not CONTRADICTED, v.sentence()


def _bad(v):
    assert v.outcome is CONTRADICTED, v.sentence()


# --------------------------------------------------------------------------------------------------------
# E1


@pytest.fixture(scope="module")
def e1():
    return gaussian_representation_experiment(
        _rng(1), lengths=[1, 4, 32], num_sequences=3000, readout=U, tau=1.0, sigma=2.0, label_noise=0.1
    )


def test_e1_1_bayes_risk_against_a_wrong_closed_form(e1):
    _ok(V.bayes_risk_verdict(e1.lengths, e1.sq_error_posterior, e1.risk_posterior_theory))
    wrong = gaussian_risk_theory(U, e1.lengths, 1.0, 1.0, 0.1)  # noise scale 1 instead of 2
    _bad(V.bayes_risk_verdict(e1.lengths, e1.sq_error_posterior, wrong))


def test_e1_2_richer_statistic_against_a_worse_reference(e1):
    _ok(V.richer_statistic_verdict(e1.sq_error_flat_ls, e1.sq_error_posterior))
    # the posterior replaced by the first token's posterior: least squares on all tokens now beats it
    _bad(V.richer_statistic_verdict(e1.sq_error_flat_ls, e1.sq_error_first_token))


def test_e1_3_first_token_with_swapped_predictors(e1):
    _ok(V.first_token_verdict(e1.lengths, e1.sq_error_first_token, e1.sq_error_posterior))
    _bad(V.first_token_verdict(e1.lengths, e1.sq_error_posterior, e1.sq_error_first_token))


def _concept_run(sigma_used, lengths=(1, 4, 16), n=3000):
    rng = _rng(2)
    means = random_concept_means(rng, 5, 3)
    acc, conf, cal_se, acc_se = [], [], [], []
    for L in lengths:
        z, x = sample_concept_tokens(rng, n, L, means, 1.5)
        post = concept_posterior(x, means, sigma_used)
        top = post.max(axis=1)
        a = np.mean(post.argmax(axis=1) == z)
        acc.append(a), conf.append(top.mean()), cal_se.append(np.sqrt(np.sum(top * (1 - top))) / n)
        acc_se.append(np.sqrt(a * (1 - a) / n))
    return np.array(lengths), np.array(acc), np.array(conf), np.array(cal_se), np.array(acc_se)


def test_e1_4_calibration_against_a_wrong_noise_scale():
    L, acc, conf, cal_se, _ = _concept_run(1.5)
    _ok(V.calibration_verdict(L, acc, conf, cal_se))
    L, acc, conf, cal_se, _ = _concept_run(0.6)  # a posterior that assumes too little noise is overconfident
    _bad(V.calibration_verdict(L, acc, conf, cal_se))


def test_e1_5_accuracy_against_reversed_lengths():
    L, acc, _, _, acc_se = _concept_run(1.5)
    _ok(V.concept_accuracy_verdict(L, acc, acc_se))
    _bad(V.concept_accuracy_verdict(L, acc[::-1], acc_se[::-1]))  # the accuracies attributed to the wrong L


# --------------------------------------------------------------------------------------------------------
# E2


@pytest.fixture(scope="module")
def e2():
    arms = np.stack([INV, np.eye(2), np.zeros((2, 2))])
    return attention_error_vs_length(_rng(3), arms, lengths=[64, 128, 256, 512, 1024], num_sequences=3000, **M3)


def test_e2_1_agreement_against_a_formula_without_the_tilt_factor(e2):
    _ok(V.mse_agreement_verdict(e2.lengths, e2.rmse[0], e2.rmse_se[0], e2.rmse_predicted[0]))
    # (ex-mse) without its factor exp(q^T Sigma^-1 q) (the effective sample size of a query in the tails)
    wrong = np.sqrt((QUERY @ QUERY + np.trace(SIGMA) + 0.25) / e2.lengths)
    _bad(V.mse_agreement_verdict(e2.lengths, e2.rmse[0], e2.rmse_se[0], wrong))


def test_e2_2_rate_against_a_wrong_exponent(e2):
    _ok(V.attention_rate_verdict(e2.lengths, e2.mse[0], e2.mse_cov[0, :, 0, :]))
    _bad(V.attention_rate_verdict(e2.lengths, e2.mse[0], e2.mse_cov[0, :, 0, :], expected=-1.0))


def test_e2_3_bias_floors_against_swapped_floors(e2):
    _ok(V.bias_floor_verdict(["I", "0"], e2.rmse[1:, -1], e2.rmse_se[1:, -1], e2.bias_floor[1:]))
    _bad(V.bias_floor_verdict(["I", "0"], e2.rmse[1:, -1], e2.rmse_se[1:, -1], e2.bias_floor[1:][::-1]))


BETAS = [0.75, 1.0, 1.25]


def _temperature_run(length, betas, n, seed):
    return attention_error_vs_length(
        _rng(seed), np.array([b * INV for b in betas]), lengths=[length], num_sequences=n, **M3
    )


def test_e2_4_unit_temperature_optimal_at_large_length_not_at_small():
    large = _temperature_run(2048, BETAS, 600, 4)
    _ok(V.temperature_optimum_verdict(BETAS, large.mse[:, 0], large.mse_cov[:, 0, :, 0], length=2048))
    # the same check at L = 16, where the variance term makes a softer attention better
    small = _temperature_run(16, BETAS, 20000, 5)
    _bad(V.temperature_optimum_verdict(BETAS, small.mse[:, 0], small.mse_cov[:, 0, :, 0], length=16))


def _softer(beta, n=20000):
    res = _temperature_run(64, [beta, 1.0], n, 6)
    m, c = res.mse[:, 0], res.mse_cov[:, 0, :, 0]
    return V.softer_temperature_verdict(m[0], m[1], c[0, 1], c[0, 0], c[1, 1], beta=beta, length=64)


def test_e2_5_softer_temperature_against_a_sharper_one():
    beta_star = 0.87  # the minimum of (ex-mse) at L = 64 (computed in the chapter)
    predicted = [predicted_attention_mse(b * INV, QUERY, SIGMA, 0.5, 64) for b in (beta_star, 1.0)]
    assert predicted[0] < predicted[1]
    _ok(_softer(beta_star))
    _bad(_softer(1.15))  # a wrong optimum on the sharp side of beta = 1


@pytest.fixture(scope="module")
def e2b():
    return bandwidth_experiment(
        _rng(7),
        lengths=[64, 256, 1024, 4096],
        bandwidths=np.geomspace(0.02, 1.0, 16),
        num_sequences=300,
        query=0.7,
        value_noise=0.3,
    )


def test_e2b_1_e2b_2_bandwidth_rates_against_an_untuned_bandwidth(e2b):
    for v in V.bandwidth_rate_verdicts(_rng(8), e2b.lengths, e2b.bandwidths, e2b.sq_error, num_bootstrap=200):
        _ok(v)
    # an estimator that does not tune its bandwidth (the grid reduced to h = 0.3): no rate in L
    k = int(np.argmin(np.abs(e2b.bandwidths - 0.3)))
    h_fixed, mse_fixed = V.bandwidth_rate_verdicts(
        _rng(8), e2b.lengths, e2b.bandwidths[k : k + 1], e2b.sq_error[:, :, k : k + 1], num_bootstrap=200
    )
    _bad(h_fixed)
    _bad(mse_fixed)


def _cme(**kwargs):
    return cme_vs_softmax_experiment(
        _rng(9),
        lengths=[32, 256],
        num_sequences=20,
        queries=np.linspace(-1.5, 1.5, 5),
        bandwidth=0.3,
        value_noise=0.3,
        **kwargs,
    )


def test_e2c_1_cme_decrease_against_a_growing_ridge():
    _ok(V.cme_decrease_verdict([32, 256], _cme(ridge_scale=0.1).sq_error_cme))
    _bad(V.cme_decrease_verdict([32, 256], _cme(ridge_scale=0.1, ridge_exponent=1.0).sq_error_cme))


def test_e2c_2_cme_against_an_oversmoothed_cme():
    good = _cme(ridge_scale=0.1)
    _ok(V.cme_vs_softmax_verdict(256, good.sq_error_cme[:, -1], good.sq_error_softmax[:, -1]))
    bad = _cme(ridge_scale=30.0)  # a ridge so large that the estimate shrinks towards 0
    _bad(V.cme_vs_softmax_verdict(256, bad.sq_error_cme[:, -1], bad.sq_error_softmax[:, -1]))


# --------------------------------------------------------------------------------------------------------
# E3


@pytest.fixture(scope="module")
def e3():
    return erm_experiment(
        _rng(10),
        "supervised",
        lengths=[4, 512],
        sample_sizes=[200, 1600],
        repetitions=6,
        test_size=2000,
        reference_size=3000,
        key_cov=SIGMA,
        value_noise=0.5,
    )


def test_e3_1_approximation_against_a_wrong_target(e3):
    _ok(V.approximation_verdict("supervised", e3.lengths, e3.approximation, e3.approximation_cov))
    # distance to a wrong desired parameter, Sigma^-1 / 2: it grows as W*_L sharpens towards Sigma^-1
    dist, cov = approximation_terms(e3.W_reference, e3.reference_cov, INV / 2)
    _bad(V.approximation_verdict("supervised", e3.lengths, dist, cov))


def test_e3_2_sample_size_against_an_estimator_that_ignores_the_data(e3):
    _ok(V.sample_size_verdict("supervised", e3.sample_sizes, e3.excess))
    # the fits at the larger N replaced by uniform attention (W = 0), whatever the data
    rng = _rng(13)
    wrong = e3.excess.copy()
    for j, L in enumerate(e3.lengths):
        test = sample_task(rng, "supervised", 2000, int(L), SIGMA, 0.5)
        wrong[j, -1, :] = attention_risk(np.zeros((2, 2)), test) - attention_risk(e3.W_reference[j], test)
    _bad(V.sample_size_verdict("supervised", e3.sample_sizes, wrong))


def test_e3_3_length_against_an_estimator_that_ignores_the_data_at_the_largest_length(e3):
    _ok(V.length_verdict("supervised", e3.lengths, e3.excess))
    # the fits at the largest L replaced by uniform attention (W = 0)
    test = sample_task(_rng(11), "supervised", 2000, int(e3.lengths[-1]), SIGMA, 0.5)
    worse = attention_risk(np.zeros((2, 2)), test) - attention_risk(e3.W_reference[-1], test)
    wrong = np.stack([e3.excess[0], np.full(e3.excess.shape[1:], worse)])
    _bad(V.length_verdict("supervised", e3.lengths, wrong))


def test_e3_2_e3_3_weigh_cells_of_very_different_scale_alike():
    # a 20-fold drop in every cell, the cells 1 to 1000 times apart in scale: pooling the raw differences lets the
    # largest cell's spread hide the drop, the rank test within cells does not
    rng = _rng(14)
    scale = np.array([1.0, 0.1, 0.01, 0.001])[:, None, None]
    noise = rng.lognormal(0.0, 1.0, size=(4, 2, 4))
    excess = scale * noise * np.array([1.0, 1 / 20])[None, :, None]
    sizes, lengths = [50, 800], [8, 32, 128, 512]
    v = V.sample_size_verdict("supervised", sizes, excess, lengths=lengths)
    assert v.outcome is Outcome.HOLDS and v.p_value < 1e-3, v.sentence()
    assert "conditional on the test set and the reference minimiser" in v.test and "L = 512" in v.measured
    _bad(V.sample_size_verdict("supervised", sizes, excess[:, ::-1], lengths=lengths))
    same = scale * rng.lognormal(0.0, 1.0, size=(4, 2, 4))
    assert V.sample_size_verdict("supervised", sizes, same).outcome is Outcome.NOT_SIGNIFICANT
    # E3.3 on the same numbers with lengths and sample sizes swapped: cells are the sample sizes
    swapped = np.transpose(excess, (1, 0, 2))
    assert V.length_verdict("masked", [8, 512], swapped, sample_sizes=lengths).outcome is Outcome.HOLDS
    _bad(V.length_verdict("masked", [8, 512], swapped[::-1], sample_sizes=lengths))


def test_stratified_rank_test_is_the_exact_permutation_test():
    import itertools

    rng = _rng(15)
    a, b = rng.normal(size=(2, 3)) + 0.8, rng.normal(size=(2, 2))
    out = V.stratified_rank_test(a, b)
    # brute force: every split of each stratum's 5 values into 3 and 2
    values = np.concatenate([a, b], axis=1)
    splits = list(itertools.combinations(range(5), 3))

    def u(stratum, first):
        rest = [i for i in range(5) if i not in first]
        x, y = values[stratum, list(first)], values[stratum, rest]
        return np.sum(x[:, None] > y[None, :])

    null = np.array([u(0, s0) + u(1, s1) for s0 in splits for s1 in splits])
    assert out["U"] == u(0, (0, 1, 2)) + u(1, (0, 1, 2)) and out["pairs"] == 12
    assert out["p_greater"] == pytest.approx(np.mean(null >= out["U"]))
    assert out["p_smaller"] == pytest.approx(np.mean(null <= out["U"]))
    assert out["smallest_p"] == pytest.approx(0.1**2)
    # a level below the smallest attainable p is reported
    v = V.sample_size_verdict(
        "supervised", [50, 800], np.stack([a[:, :2], b], axis=1) + 10 * np.eye(2)[None, 0, :, None]
    )
    assert "not attainable" in v.measured and v.outcome is Outcome.NOT_SIGNIFICANT
    with pytest.raises(ValueError, match="larger and smaller"):
        V.stratified_rank_test(a, b[:1])


def test_e3_4_softening_against_a_wrong_desired_parameter(e3):
    _ok(V.softening_verdict("supervised", e3.lengths, e3.temperature, e3.temperature_se))
    # c_L measured along Sigma^-1 / 2 (a desired parameter half as sharp) is about twice as large
    _bad(V.softening_verdict("supervised", e3.lengths, 2 * e3.temperature, 2 * e3.temperature_se))


# --------------------------------------------------------------------------------------------------------
# E4


@pytest.fixture(scope="module")
def e4():
    return transfer_experiment(
        _rng(12), condition_numbers=[1, 4, 16], length=256, num_sequences=4000, value_noise=0.5, label_noise=0.05
    )


def test_e4_1_transfer_ratio_against_the_worst_case(e4):
    _ok(V.transfer_ratio_verdict(e4.condition_numbers, e4.downstream_sq, e4.ratio_predicted))
    _bad(V.transfer_ratio_verdict(e4.condition_numbers, e4.downstream_sq, e4.condition_numbers))


def test_e4_2_pretraining_against_reversed_condition_numbers(e4):
    _ok(V.pretraining_verdict(e4.condition_numbers, e4.pretrain_sq))
    _bad(V.pretraining_verdict(e4.condition_numbers, e4.pretrain_sq[::-1]))


# --------------------------------------------------------------------------------------------------------
# the helpers


def test_all_positive_decides_on_the_weakest_entry():
    assert (
        V.all_positive(
            "c", "s", source="t", statistic="x", estimates=[5.0, 3.5], ses=[1.0, 1.0], labels=["a", "b"]
        ).outcome
        is Outcome.HOLDS
    )
    # z = 2.5 clears the one-sided 1 % threshold of one test (2.33), not that of two (2.58)
    assert (
        V.all_positive(
            "c", "s", source="t", statistic="x", estimates=[5.0, 2.5], ses=[1.0, 1.0], labels=["a", "b"]
        ).outcome
        is Outcome.NOT_SIGNIFICANT
    )
    _bad(V.all_positive("c", "s", source="t", statistic="x", estimates=[5.0, -3.0], ses=[1.0, 1.0], labels=["a", "b"]))
    with pytest.raises(ValueError, match="same non-zero length"):
        V.all_positive("c", "s", source="t", statistic="x", estimates=[1.0], ses=[1.0], labels=["a", "b"])
