"""The hidden-Markov-chain (HMC) sequence classification task (sec-hmc-task, sec-model-hmc-heads, sec-hmc-network).

* :mod:`~attnpaths.hmc.data`: the data set ``markov_optionE`` (:func:`markov_optionE`,
  :func:`paper_train_set`, :func:`paper_test_set`; :class:`HMCBlocks`, the inputs of large sets made block by block);
* :mod:`~attnpaths.hmc.heads`: the hand-built attention heads (:func:`hmc_head` and its four versions);
* :mod:`~attnpaths.hmc.networks`: the 4-path, 2-path and GP reference networks with path names and colours.
"""

from .data import (
    TEST_SEED,
    TRAIN_SEED,
    HMCBlocks,
    HMCDataset,
    HMCTask,
    markov_optionE,
    paper_test_set,
    paper_train_set,
)
from .heads import (
    HEAD_VERSIONS,
    PAPER_BETA,
    blank,
    default_bos_strength,
    different_token,
    hmc_head,
    same_token,
    uniform_attention,
)
from .networks import (
    PATH_COLORS,
    PATH_LABELS,
    PLOT_ORDER_NAMES,
    HMCNetwork,
    four_path_network,
    good_and_denoising_network,
    good_path_network,
    two_path_network,
)

__all__ = [
    "HEAD_VERSIONS",
    "PAPER_BETA",
    "PATH_COLORS",
    "PATH_LABELS",
    "PLOT_ORDER_NAMES",
    "TEST_SEED",
    "TRAIN_SEED",
    "HMCBlocks",
    "HMCDataset",
    "HMCNetwork",
    "HMCTask",
    "blank",
    "default_bos_strength",
    "different_token",
    "four_path_network",
    "good_and_denoising_network",
    "good_path_network",
    "hmc_head",
    "markov_optionE",
    "paper_test_set",
    "paper_train_set",
    "same_token",
    "two_path_network",
    "uniform_attention",
]
