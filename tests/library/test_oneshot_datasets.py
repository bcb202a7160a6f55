"""The rendered Omniglot-like set: shapes, disjoint splits, determinism, per-class seeding and the cache."""

import os

import numpy as np
import pytest

from attnpaths.oneshot import datasets
from attnpaths.oneshot.datasets import GlyphDatasetConfig

pytestmark = pytest.mark.needs("tasks")  # the glyphs are drawn from matplotlib's fonts

SMALL = GlyphDatasetConfig(
    instances_per_class=4,
    alphabets=("Latin", "Coptic", "Armenian"),
    max_per_alphabet=5,
)


@pytest.fixture(scope="module")
def small():
    return datasets.render_glyph_dataset(SMALL, progress=False)


def test_splits_hold_disjoint_classes_of_fixed_alphabets(small):
    assert small.train.alphabets == ("Latin",) * 5
    assert small.validation.alphabets == ("Coptic",) * 5
    assert small.test.alphabets == ("Armenian",) * 5
    names = [set(small.split(s).names) for s in ("train", "validation", "test")]
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
    for split in ("train", "validation", "test"):
        classes = small.split(split)
        assert classes.images.shape == (5, 4, 32, 32) and classes.images.dtype == np.float32
        assert classes.styles.shape == (5, 4) and classes.distortions.shape == (5, 4, 7)


def test_images_are_8_bit_grayscale_with_white_background(small):
    images = small.train.images
    # exact on any CPU: the pixels are k / 255 (one correctly rounded division); k / 255 * 255 rounds back to k
    np.testing.assert_array_equal(np.round(images * 255) / 255, images)
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.median(images) == 1.0  # mostly background
    assert (images[:, :, 0, :] == 1.0).mean() > 0.95  # the glyph box leaves a margin


def test_instances_of_a_class_differ_and_vary_their_faces(small):
    images = small.train.images
    for c in range(images.shape[0]):
        flat = images[c].reshape(4, -1)
        assert len({row.tobytes() for row in flat}) == 4
    latin_styles = small.train.styles
    assert len(np.unique(latin_styles)) > 1
    assert np.unique(small.train.distortions[..., 2]).size == 20  # every instance its own rotation


def test_same_parameters_give_bit_identical_arrays(small):
    again = datasets.render_glyph_dataset(SMALL, progress=False)
    for split in ("train", "validation", "test"):  # determinism: the same renderer, the same parameters, twice
        np.testing.assert_array_equal(small.split(split).images, again.split(split).images)
    other_seed = datasets.render_glyph_dataset(
        GlyphDatasetConfig(instances_per_class=4, alphabets=("Latin",), max_per_alphabet=5, seed=1), progress=False
    )
    assert not np.array_equal(small.train.images, other_seed.train.images)


def test_a_class_does_not_depend_on_the_other_classes(small):
    latin_only = datasets.render_glyph_dataset(
        GlyphDatasetConfig(instances_per_class=4, alphabets=("Latin",), max_per_alphabet=5), progress=False
    )
    np.testing.assert_array_equal(latin_only.train.images, small.train.images)  # determinism: the same classes rendered


def test_cache_round_trip_and_key(tmp_path, small):
    first = datasets.load_glyph_dataset(SMALL, cache_dir=str(tmp_path), progress=False)
    path = datasets.glyph_cache_path(SMALL, str(tmp_path))
    assert os.path.exists(path)
    stamp = os.path.getmtime(path)
    second = datasets.load_glyph_dataset(SMALL, cache_dir=str(tmp_path), progress=False)
    assert os.path.getmtime(path) == stamp  # read, not rewritten
    for split in ("train", "validation", "test"):  # determinism (rendered again), then exact (read from the cache)
        np.testing.assert_array_equal(first.split(split).images, small.split(split).images)
        np.testing.assert_array_equal(second.split(split).images, small.split(split).images)
        np.testing.assert_array_equal(second.split(split).distortions, small.split(split).distortions)
        assert second.split(split).names == small.split(split).names
    assert second.parameters == SMALL.parameters()
    assert second.parameters["versions"]["matplotlib"]
    changed = GlyphDatasetConfig(instances_per_class=5, alphabets=SMALL.alphabets, max_per_alphabet=5)
    assert datasets.glyph_cache_path(changed, str(tmp_path)) != path


def test_cache_with_foreign_parameters_is_rendered_again(tmp_path, small):
    path = datasets.glyph_cache_path(SMALL, str(tmp_path))
    os.makedirs(tmp_path, exist_ok=True)
    other = GlyphDatasetConfig(instances_per_class=4, alphabets=("Latin",), max_per_alphabet=5, seed=3)
    datasets._save(datasets.render_glyph_dataset(other, progress=False), path)
    loaded = datasets.load_glyph_dataset(SMALL, cache_dir=str(tmp_path), progress=False)
    assert loaded.parameters == SMALL.parameters()
    np.testing.assert_array_equal(loaded.train.images, small.train.images)  # determinism: rendered again


def test_a_damaged_cache_file_is_rendered_again_and_rewritten_never_read(tmp_path, small):
    """One flipped byte of the cached set (or a missing checksum beside it) is caught by its SHA-256: the set is
    rendered again, with one warning naming the file, and the file rewritten with the rendered bytes."""
    from attnpaths.checkpoints import DamagedCacheWarning, checksum_path

    datasets.load_glyph_dataset(SMALL, cache_dir=str(tmp_path), progress=False)
    path = datasets.glyph_cache_path(SMALL, str(tmp_path))
    good = open(path, "rb").read()
    for damage in ("flip", "no checksum"):
        if damage == "flip":
            data = bytearray(good)
            data[len(data) // 2] ^= 0x01
            open(path, "wb").write(bytes(data))
        else:
            os.remove(checksum_path(path))
        with pytest.warns(DamagedCacheWarning, match=os.path.basename(path)):
            loaded = datasets.load_glyph_dataset(SMALL, cache_dir=str(tmp_path), progress=False)
        np.testing.assert_array_equal(loaded.train.images, small.train.images)  # determinism: rendered again
        assert open(path, "rb").read() == good  # rewritten from the rendered set: the same bytes as at first
        assert checksum_path(path).exists()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"instances_per_class": 1}, "instances_per_class"),
        ({"image_size": 4}, "image_size"),
        ({"alphabets": ("Elvish",)}, "alphabet"),
        ({"seed": -1}, "seed"),
    ],
)
def test_config_rejects_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GlyphDatasetConfig(**kwargs)


def test_source_is_checked():
    with pytest.raises(ValueError, match="source"):
        datasets.load_image_dataset("imagenet")
    with pytest.raises(ValueError, match="omniglot_root"):
        datasets.load_image_dataset("omniglot")
