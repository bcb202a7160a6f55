"""The one-shot (in-context) image classification task of the paper (sec-oneshot-data), built offline.

The image classes (``glyphs`` and ``rendering`` draw an Omniglot-like set, ``datasets`` caches it, ``omniglot`` reads
the real one, ``digits`` the out-of-distribution digits), the episodes as tokens (``sequences``), the trained model
(``training``; the model itself, 2 layers x 4 summed heads with Q/K on the raw input, is
:mod:`attnpaths.transformer`), the theory of it (``episodes``, ``streams``, ``temperature_grid``), its pruning
(``pruning``), and the chapter's claims, replicates and figures (``claims``, ``replicates``, ``plots``).
"""

from .datasets import GlyphDatasetConfig, load_glyph_dataset, load_image_dataset, render_glyph_dataset
from .digits import DigitPairs, load_digit_pairs
from .imagesets import SPLITS, ImageClasses, ImageDataset
from .omniglot import read_omniglot
from .rendering import DistortionConfig
from .sequences import SequenceEncoder, Sequences, digit_sequences, sample_sequences
from .training import TrainedModel, TrainingConfig, accuracy, fit, load_or_fit, load_trained, predict, save_trained

__all__ = [
    "SPLITS",
    "DigitPairs",
    "DistortionConfig",
    "GlyphDatasetConfig",
    "ImageClasses",
    "ImageDataset",
    "SequenceEncoder",
    "Sequences",
    "TrainedModel",
    "TrainingConfig",
    "accuracy",
    "digit_sequences",
    "fit",
    "load_digit_pairs",
    "load_glyph_dataset",
    "load_image_dataset",
    "load_or_fit",
    "load_trained",
    "predict",
    "read_omniglot",
    "render_glyph_dataset",
    "sample_sequences",
    "save_trained",
]
