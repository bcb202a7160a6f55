"""Instance rendering: the affine map, the elastic field and the stroke threshold do what they say."""

import numpy as np
import pytest

from attnpaths.oneshot import rendering
from attnpaths.oneshot.rendering import IDENTITY_DISTORTION, DistortionConfig, render_instance

CONFIG = DistortionConfig()


def bar(height=10, width=60):
    return np.ones((height, width))


def ink(image):
    return 1.0 - image


def centroid(image):
    weights = ink(image)
    rows, cols = np.mgrid[0 : image.shape[0], 0 : image.shape[1]]
    return np.array([(rows * weights).sum(), (cols * weights).sum()]) / weights.sum()


def extent(image, axis):
    """Number of rows (axis=0) or columns (axis=1) that hold ink."""
    return int((ink(image) > 0.5).any(axis=1 - axis).sum())


def test_identity_fills_the_glyph_box_centred():
    image = render_instance(bar(), IDENTITY_DISTORTION, None, CONFIG, 32)
    assert image.shape == (32, 32) and image.min() >= 0 and image.max() <= 1
    assert image[0].min() == 1.0 and image[:, 0].min() == 1.0  # white background
    np.testing.assert_allclose(centroid(image), [15.5, 15.5], atol=0.3)
    assert abs(extent(image, 1) - CONFIG.glyph_box * 32) <= 1.5


def test_rotation_by_a_right_angle_turns_a_horizontal_bar_vertical():
    turned = IDENTITY_DISTORTION.copy()
    turned[2] = np.pi / 2
    flat = render_instance(bar(), IDENTITY_DISTORTION, None, CONFIG, 32)
    upright = render_instance(bar(), turned, None, CONFIG, 32)
    assert extent(flat, 1) > 3 * extent(flat, 0)
    assert extent(upright, 0) > 3 * extent(upright, 1)


def test_shift_moves_the_centroid_by_the_fraction_of_the_image():
    shifted = IDENTITY_DISTORTION.copy()
    shifted[4:6] = [0.1, -0.05]
    base = centroid(render_instance(bar(20, 20), IDENTITY_DISTORTION, None, CONFIG, 32))
    moved = centroid(render_instance(bar(20, 20), shifted, None, CONFIG, 32))
    np.testing.assert_allclose(moved - base, [3.2, -1.6], atol=0.3)


def test_lower_stroke_threshold_gives_thicker_strokes():
    amounts = []
    for threshold in (0.2, 0.4, 0.6):
        params = IDENTITY_DISTORTION.copy()
        params[6] = threshold
        amounts.append(ink(render_instance(bar(6, 60), params, None, CONFIG, 32)).sum())
    assert amounts[0] > amounts[1] > amounts[2] > 0


def test_elastic_field_has_the_requested_rms_and_is_smooth():
    rng = np.random.default_rng(0)
    field = rendering.sample_elastic_field(rng, CONFIG, 32)
    assert field.shape == (2, 64, 64)
    rms = np.sqrt(np.mean(np.sum(field**2, axis=0)))
    np.testing.assert_allclose(rms, CONFIG.elastic_amplitude * CONFIG.supersampling, rtol=1e-12)
    # neighbouring pixels move almost together (correlation length of several pixels)
    assert np.corrcoef(field[0, :, :-1].ravel(), field[0, :, 1:].ravel())[0, 1] > 0.9


def test_sampled_distortions_stay_in_their_ranges():
    rng = np.random.default_rng(1)
    samples = np.array([rendering.sample_distortion(rng, CONFIG) for _ in range(500)])
    assert samples.shape == (500, len(rendering.DISTORTION_NAMES))
    assert samples[:, 0].min() >= CONFIG.scale_range[0] and samples[:, 0].max() <= CONFIG.scale_range[1]
    assert np.abs(np.log(samples[:, 1])).max() <= CONFIG.aspect_jitter + 1e-12
    assert np.abs(samples[:, 2]).max() <= np.deg2rad(CONFIG.rotation_degrees)
    assert np.abs(samples[:, 4:6]).max() <= CONFIG.shift
    assert samples[:, 6].min() >= CONFIG.stroke_threshold[0] and samples[:, 6].max() <= CONFIG.stroke_threshold[1]
    assert samples.std(axis=0).min() > 0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"glyph_box": 0}, "glyph_box"),
        ({"stroke_threshold": (0.7, 0.2)}, "stroke_threshold"),
        ({"supersampling": 0}, "supersampling"),
        ({"shear": -1.0}, "shear"),
    ],
)
def test_config_rejects_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DistortionConfig(**kwargs)


@pytest.mark.needs("tasks")
def test_resize_keeps_constant_images_and_mean():
    images = np.random.default_rng(2).uniform(size=(3, 105, 105)).astype(np.float32)
    images[0] = 0.25
    out = rendering.resize_images(images, 32)
    assert out.shape == (3, 32, 32) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], 0.25, atol=1e-6)
    np.testing.assert_allclose(out.mean(axis=(1, 2)), images.mean(axis=(1, 2)), atol=0.02)


def test_scaled_distortion_keeps_the_default_at_one_and_shrinks_the_ranges():
    assert CONFIG.scaled(1) is CONFIG and CONFIG.scaled(1.0).as_dict() == DistortionConfig().as_dict()
    half = CONFIG.scaled(0.5)
    assert half.rotation_degrees == CONFIG.rotation_degrees / 2 and half.shift == CONFIG.shift / 2
    assert half.elastic_amplitude == CONFIG.elastic_amplitude / 2 and half.stroke_threshold == CONFIG.stroke_threshold
    assert half.scale_range == pytest.approx((1 - (1 - CONFIG.scale_range[0]) / 2, 1 + (CONFIG.scale_range[1] - 1) / 2))
    rng = np.random.default_rng(0)
    none = np.array([rendering.sample_distortion(rng, CONFIG.scaled(0)) for _ in range(20)])
    assert np.allclose(none[:, :6], IDENTITY_DISTORTION[:6])
    with pytest.raises(ValueError, match="factor"):
        CONFIG.scaled(-0.1)
