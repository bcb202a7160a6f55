"""Out-of-distribution digits from scikit-learn: classes, halves, polarity and size."""

import numpy as np
import pytest

from attnpaths.oneshot.digits import load_digit_pairs

load_digits = pytest.importorskip(
    "sklearn.datasets", reason="the digits are scikit-learn's: pip install 'attnpaths[tasks]'"
).load_digits


def test_support_and_query_halves_of_the_two_digits():
    pairs = load_digit_pairs((0, 1))
    target = load_digits().target
    counts = [(target == d).sum() for d in (0, 1)]
    assert pairs.support.shape == (2, min(c // 2 for c in counts), 32, 32)
    assert pairs.queries.shape[0] == sum(c - c // 2 for c in counts)
    assert pairs.query_labels.sum() == counts[1] - counts[1] // 2
    # no query image is also a support image
    support = {im.tobytes() for im in pairs.support.reshape(-1, 32, 32)}
    assert not any(q.tobytes() in support for q in pairs.queries)


def test_digits_are_told_apart_by_their_ink():
    pairs = load_digit_pairs((0, 1))
    # a zero is a ring: its centre is dark (no ink), a one's centre is bright ink
    zero_centre = pairs.support[0, :, 14:18, 14:18].mean()
    one_centre = pairs.support[1, :, 14:18, 14:18].mean()
    assert one_centre > zero_centre + 0.3
    assert pairs.queries.min() >= 0 and pairs.queries.max() <= 1


def test_invert_flips_polarity_and_resizing_keeps_the_mean():
    plain = load_digit_pairs((3, 8), image_size=16)
    inverted = load_digit_pairs((3, 8), image_size=16, invert=True)
    np.testing.assert_allclose(plain.queries + inverted.queries, 1.0, atol=1e-5)
    original = load_digits().images / 16.0
    both = np.isin(load_digits().target, (3, 8))
    np.testing.assert_allclose(plain.queries.mean(), original[both][-plain.queries.shape[0] :].mean(), atol=0.05)


@pytest.mark.parametrize("digits", [(1, 1), (0, 10), (2,)])
def test_rejects_bad_digits(digits):
    with pytest.raises(ValueError, match="digits"):
        load_digit_pairs(digits)
