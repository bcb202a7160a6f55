"""The one-shot (in-context) image classification task of the paper (sec-oneshot-data), built offline.

Modules, one job each:

* ``glyphs``     alphabets from Unicode blocks and the character classes the shipped fonts really draw;
* ``rendering``  one glyph -> one distorted 32x32 grayscale instance (face, affine, elastic, stroke);
* ``imagesets``  containers: the images of a split, and the three disjoint splits;
* ``datasets``   the rendered Omniglot-like set, cached under its parameters; source selection;
* ``omniglot``   reader for the real Omniglot folder layout (when a copy is on disk);
* ``digits``     out-of-distribution digits 0 vs 1 from scikit-learn;
* ``sequences``  episodes [support A, support B, query] -> token features x [B, N0, T] and targets;
* ``training``   Adam training with validation, and weights saved with their parameters; the model itself,
                 2 layers x 4 summed heads with Q/K on the raw input, is :mod:`attnpaths.transformer`;
* ``episodes``   the theory network of a trained model and the episodes' path features;
* ``streams``    chunks of episodes and their path features made one at a time from a seed, for training sets
                 too large to hold (streamed into the theory's Gram statistics);
* ``temperature_grid`` the theory over widths and temperatures, and the temperature chosen per width;
* ``pruning``    pruning the trained model by the theory's head scores (Figs. 3e, 3f);
* ``claims``, ``plots``, ``report``  the chapter's claims, figures and descriptions.
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
