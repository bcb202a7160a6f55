"""The real-Omniglot reader, on a tiny folder tree in the official layout made by the test."""

import numpy as np
import pytest

from attnpaths.oneshot import datasets, omniglot
from attnpaths.oneshot.datasets import GlyphDatasetConfig

Image = pytest.importorskip("PIL.Image", reason="the drawings are read with pillow: pip install 'attnpaths[tasks]'")

LAYOUT = {
    "images_background": {"Alpha_script": 2, "Beta_script": 1, "Gamma_script": 2},
    "images_evaluation": {"Delta_script": 3},
}


def drawing(row):
    """A 105x105 1-bit Omniglot-like drawing: white page, a black square whose row encodes the class."""
    page = np.ones((105, 105), dtype=bool)
    page[row : row + 30, 40:70] = False
    return Image.fromarray(page)


@pytest.fixture()
def root(tmp_path):
    row = 0
    for folder, alphabets in LAYOUT.items():
        for alphabet, n_characters in alphabets.items():
            for k in range(n_characters):
                char_dir = tmp_path / folder / alphabet / f"character{k + 1:02d}"
                char_dir.mkdir(parents=True)
                for drawer in range(3):
                    drawing(row).save(char_dir / f"{row:04d}_{drawer + 1:02d}.png")
                row += 10
    (tmp_path / "images_background" / "README.txt").write_text("not an alphabet")
    return tmp_path


def test_reads_splits_by_alphabet(root):
    data = omniglot.read_omniglot(root, image_size=32, instances_per_class=3, validation_alphabets=1, progress=False)
    assert data.train.alphabets == ("Alpha_script",) * 2 + ("Beta_script",)
    assert data.validation.names == ("Gamma_script/character01", "Gamma_script/character02")
    assert data.test.names == tuple(f"Delta_script/character{k:02d}" for k in (1, 2, 3))
    assert data.train.images.shape == (3, 3, 32, 32) and data.test.images.shape == (3, 3, 32, 32)
    assert data.parameters["validation_alphabets"] == ["Gamma_script"]


def test_pixels_keep_omniglot_polarity_and_position(root):
    data = omniglot.read_omniglot(root, image_size=32, instances_per_class=3, validation_alphabets=1, progress=False)
    images = data.train.images
    assert images.max() == pytest.approx(1.0) and images.min() == pytest.approx(0.0)
    # background white at the corners; ink (0) inside the square of class k, which starts at row 10 k
    assert images[:, :, 0, 0].min() == pytest.approx(1.0)
    for k in range(3):
        centre_row = int((10 * k + 15) * 32 / 105)
        assert images[k, :, centre_row, 16].max() < 0.05
    ink_rows = [np.flatnonzero(images[k, 0].min(axis=1) < 0.5).mean() for k in range(3)]
    assert ink_rows[0] < ink_rows[1] < ink_rows[2]


def test_selected_through_load_image_dataset(root):
    config = GlyphDatasetConfig(instances_per_class=2, image_size=16)
    data = datasets.load_image_dataset(
        "omniglot", config=config, omniglot_root=str(root), omniglot_validation_alphabets=2, progress=False
    )
    assert data.train.images.shape == (2, 2, 16, 16)
    assert data.validation.alphabets == ("Beta_script", "Gamma_script", "Gamma_script")
    assert data.parameters["source"] == "omniglot"


def test_rejects_missing_folders_and_short_classes(root, tmp_path_factory):
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(ValueError, match="images_background"):
        omniglot.read_omniglot(empty, progress=False)
    with pytest.raises(ValueError, match="instances_per_class"):
        omniglot.read_omniglot(root, instances_per_class=4, validation_alphabets=1, progress=False)
    with pytest.raises(ValueError, match="validation_alphabets"):
        omniglot.read_omniglot(root, instances_per_class=3, validation_alphabets=3, progress=False)
