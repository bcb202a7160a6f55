"""The book's equation and section labels that the docstrings of ``attnpaths`` cite.

Docstrings refer to the equations of the theory and of the experiments by the labels of the companion book,
such as ``(eq-action)`` for the action or ``(sec-head-scores)`` for the section on head scores. This module
explains each of them without the book: ``EQUATIONS`` states every cited ``eq-...`` label in words with a
plain-text formula (notation as in the book), and ``SECTIONS`` names the chapter file and the title of
every cited ``sec-...`` label. ``CHAPTERS`` records the chapter file that defines each label, and
``location(label)`` its anchor in that file and in the built HTML book. ``import attnpaths.equations;
help(attnpaths.equations)`` lists them. To follow a label, ``attnpaths.equations.describe("eq-action")`` gives
its words, its page and its anchor (``book/theory.md#eq-action``, in the built book
``_build/html/book/theory.html#equation-eq-action``).

Notation: ``pi = (h_1, ..., h_L)`` is an attention path (one head per layer), ``H = prod_l H_l`` the number of
paths, ``U`` the order parameter (a matrix over pairs of paths), ``T`` the temperature (the likelihood
variance), ``y`` the training labels, ``P`` the number of training examples, ``s_l = sigma_l^2`` the prior
variances and ``N_l`` the widths.
"""

from __future__ import annotations

__all__ = ["CHAPTERS", "EQUATIONS", "SECTIONS", "describe", "location"]

EQUATIONS: dict[str, str] = {
    # book/theory.md: the theory
    "eq-forward": (
        "The forward pass of the network with fixed attention: x^(l)_t = (1/sqrt(H_l N_l)) sum_{h=1}^{H_l} "
        "V^(l,h) sum_s x^(l-1)_s Omega^(l,h)_{st}(x) for the layers l = 1, ..., L, and the output "
        "f(x) = (1/sqrt(N_a)) a . xbar^(L). Each layer sums over its H_l heads the value matrix V^(l,h) applied "
        "to the previous layer's tokens mixed by the head's attention Omega^(l,h)(x); x^(0) is the input after "
        "the linear input layer V^(0), xbar^(L) the token readout (last token, first token or average over "
        "tokens) and a the linear readout."
    ),
    "eq-path-features": (
        "The path feature of an attention path pi = (h_1, ..., h_L), one head per layer: "
        "xi_pi(x) = sum_s x_s omega_{pi,s}(x), with omega_{pi,s} = sum_{s_1 ... s_{L-1}} "
        "Omega^(1,h_1)_{s s_1} ... omega^(L,h_L)_{s_{L-1}}. It is the raw input x routed along the product of "
        "the attention matrices of the path's heads, a vector of the input width N_0."
    ),
    "eq-path-form": (
        "The network's output as a sum over attention paths: f(x) = (1/sqrt(N_0 N_1 H)) sum_pi "
        "e_pi . V^(0) xi_pi(x), with H = prod_l H_l the number of paths. Each path's feature xi_pi(x) "
        "(eq-path-features) is read out by its effective weight e_pi = a^T V^(L,h_L) ... V^(1,h_1) (normalised "
        "by the widths)."
    ),
    "eq-kernel": (
        "The path-path kernels and the renormalised kernel: C^{mu nu}_{pi pi'} = (sigma_0^2/N_0) "
        "xi_pi(x^mu) . xi_pi'(x^nu) for a pair of paths and a pair of inputs, and K^{mu nu}(U) = (1/H) "
        "sum_{pi,pi'} U_{pi pi'} C^{mu nu}_{pi pi'}. The order parameter U, an H x H positive-definite matrix "
        "over the paths, weights the path-path kernels, cross-path ones included."
    ),
    "eq-action": (
        "The action S(U) = log det(K(U_1) + T I) + y^T (K(U_1) + T I)^{-1} y + S_ent(U_a, U_L, ..., U_1): an "
        "energy (up to a constant, minus twice the log Gaussian-process marginal likelihood of the training "
        "labels y under the renormalised kernel K(U_1) of eq-kernel, at temperature T) plus the entropy "
        "S_ent (eq-entropy). Its arguments are the order parameters, one symmetric positive-definite U_l per "
        "layer over the paths of layers l, ..., L and a scalar U_a for the readout; the theory's order "
        "parameters minimise it."
    ),
    "eq-entropy": (
        "The entropy term of the action: S_ent = N_a [U_a/s_a - log U_a] + N_L [Tr U_L/(s_L U_a) - log det U_L "
        "+ H_L log U_a] + sum_{l=1}^{L-1} N_l [Tr(U_{l+1}^{-1} Utilde_l)/s_l - log det U_l + H_l log det U_{l+1}], "
        "with s_l the prior variances, N_l and N_a the widths and Utilde_l the partial trace of U_l over the "
        "layer-l head index. Each bracket is the entropy of a Wishart-like matrix around its prior value "
        "s_l (I_{H_l} kron U_{l+1}), so the entropy pulls every U_l towards the product of the prior variances."
    ),
    "eq-readout": (
        "The readout order parameter in closed form, from dS/dU_a = 0: U_a = (1/2)(-beta + sqrt(beta^2 + "
        "4 gamma)), with beta = s_a (H_L N_L/N_a - 1) and gamma = (N_L s_a/(N_a s_L)) Tr U_L."
    ),
    "eq-predictor": (
        "The theory's predictor: at the minimum of the action, the network's output on a test input x* is "
        "Gaussian with mean <f(x*)> = k^T (K + T I)^{-1} y and variance Var f(x*) = kappa - k^T (K + T I)^{-1} k, "
        "where k_mu = K(x^mu, x*) and kappa = K(x*, x*) are built with the same U_1. The classification "
        "accuracy is the fraction of test inputs with sign <f> = y."
    ),
    "eq-gp": (
        "The Gaussian-process limit of the kernel: when every width grows at fixed P, the entropy pins the order "
        "parameters at their prior values U_a = s_a and U_l = s_a s_L ... s_l I, and the kernel becomes "
        "K_GP = (s_a s_1 ... s_L/H) sum_pi C_{pi pi}. Cross-path kernels are discarded and same-path kernels "
        "are weighted equally."
    ),
    "eq-sampled-u": (
        "The order parameter in weight space: U_{pi pi'} = < (1/N_1) e_pi . e_pi' >_posterior, the posterior "
        "average of the overlap of the effective weights e_pi and e_pi' of two paths (eq-path-form), which "
        "posterior samples of the network's weights measure."
    ),
    # book/hmc.md: the exact finite-width density of the order parameters
    "eq-exact-density": (
        "The exact finite-width density of the order parameters, proportional to exp(-S_exact/2) with "
        "S_exact = S_en(U_1) + S_ent(U_1, ..., U_L, U_a) + sum_l (n_l + 1) log det U_l + 2 log U_a, where S_en "
        "is the energy of the action (eq-action), S_ent its entropy (eq-entropy) with U_a kept as a variable and "
        "n_l the size of U_l. It holds because U_l given U_{l+1} is a Wishart matrix with N degrees of freedom "
        "and, given U_1, the labels have the Gaussian likelihood exp(-S_en(U_1)/2); its mean is the exact "
        "posterior mean of U at width N, which differs from the saddle point of the action by O(1/N)."
    ),
    # book/pruning.md: the models and the pruning rankings
    "eq-pruning-mha": (
        "A plain stack of torch.nn.MultiheadAttention layers with head masks: h^(l)_t = sum_{h=1}^{H} xi_{l,h} "
        "W_o^h sum_s Omega^(l,h)_{st} W_v^h h^(l-1)_s, with Omega^(l,h)_{st} = softmax_s((W_q^h h^(l-1)_t) . "
        "(W_k^h h^(l-1)_s)/sqrt(d)), h^(0)_t = E x_t and f(x) = a . (1/T_seq) sum_t h^(L)_t over the T_seq "
        "tokens. Each layer computes its attention from the previous layer's output; the head mask xi_{l,h} is "
        "1 in the trained model, and pruning head (l, h) sets it to 0, without retraining."
    ),
    "eq-head-score": (
        "The paper's head score: s_{l,h} = sum_{pi,pi'} |U_{pi pi'}| 1[pi_l = h or pi'_l = h], the sum of "
        "|U_{pi pi'}| over the pairs of paths that pass through head h of layer l, with U the order parameter "
        "that minimises the action (eq-action). Low-score heads are candidates for pruning."
    ),
    "eq-removal-score": (
        "The removal score of head h: r_h = <(K_h(x, X) alpha - y)^2> - <(K(x, X) alpha - y)^2> with "
        "K_h = K(D_h U D_h), the loss increase on the other training images of the theory's predictor when the "
        "head's paths are taken out of its kernel and alpha = G^{-1} y is kept (removal without retraining). "
        "D_h is the diagonal indicator of the paths that avoid head h, and G = K(U) + T I."
    ),
    "eq-action-change": (
        "The change of the minimal action when head h is removed: Delta S_h = min_U S_{\\h}(U) - min_U S(U), "
        "where S_{\\h} is the action (eq-action) of the paths that avoid the head (a network with one head "
        "fewer in that layer), minimised starting from the minimum of S with the head's entries taken out."
    ),
    "eq-action-gate": (
        "The first-order form of the action change (eq-action-change), from a gate g_h that multiplies the "
        "features of head h's paths: -dS*/dg_h at g = 1 is -tr(G^{-1} Kdot_h) + alpha^T Kdot_h alpha, with "
        "Kdot_h = K((I - D_h) U + U (I - D_h)), G = K(U) + T I and alpha = G^{-1} y. At the minimum the action "
        "is stationary in U, so only its explicit dependence on the gate counts."
    ),
    "eq-loo-score": (
        "The leave-one-out change of head h: l_h = LOO(D_h U D_h) - LOO(U), the closed-form leave-one-out "
        "error of the theory's predictor on its training images without the head minus with it, where "
        "LOO(U) = (1/P) sum_mu ([G^{-1} y]_mu / [G^{-1}]_{mu mu})^2, G = K(U) + T I and D_h is the diagonal "
        "indicator of the paths that avoid head h."
    ),
    "eq-trained-overlap": (
        "The overlaps of a trained model's own path weights: U^trained_{pi pi'} = w_pi . w_pi' / N_0, with "
        "w_pi = E^T M_{1,pi_1}^T ... M_{L,pi_L}^T a and M_{l,h} the value map of head (l, h) (W_o^h W_v^h, or "
        "V^(l,h)/sqrt(H) for summed heads). The paper's head score (eq-head-score) applied to them ranks the "
        "heads of the trained weights."
    ),
    "eq-michel-importance": (
        "The gradient importance of Michel, Levy and Neubig (2019): I_{l,h} = E_x |d l(x)/d xi_{l,h}| at "
        "xi = 1, the expected absolute derivative of the training loss l(x) = (f(x) - y)^2 with respect to the "
        "head mask xi_{l,h} (eq-pruning-mha), and its normalised form I~_{l,h} = I_{l,h} / (sum_{h'} "
        "I_{l,h'}^2)^{1/2} over the heads of each layer."
    ),
    "eq-fisher-pruning": (
        "The joint gate Fisher criterion (after Kwon et al., 2022, in a small-scale form): the set S of k pruned "
        "heads is the one of smallest second-order loss change Delta l(S) ~ -g . 1_S + (1/2) 1_S^T F 1_S, "
        "searched over every set, with g = <dl/dxi> the gate gradient and F = <(dl/dxi)(dl/dxi)^T> the gate "
        "Fisher matrix at xi = 1. The heads interact through F, so the sets for different k need not be nested."
    ),
    "eq-attention-entropy": (
        "The attention entropy of head (l, h): H_{l,h} = < -sum_s Omega^(l,h)_{st} log Omega^(l,h)_{st} >_{x,t}, "
        "averaged over the inputs x and the tokens t. A head whose attention is spread evenly is taken to matter "
        "least: the highest entropy is pruned first."
    ),
    "eq-value-norm": (
        "The value-weight norm of head (l, h), for magnitude pruning (smallest first): n_{l,h} = "
        "||W_o^h W_v^h||_F for the MultiheadAttention stack and n_{l,h} = ||V^(l,h)||_F for summed heads, the "
        "Frobenius norm of the head's map into the next layer."
    ),
    # book/pruning.md: the exact optimum and the summaries of a pruning curve
    "eq-pruning-ceiling": (
        "The pruning ceiling: A*_k = max_{|S| = k} A(S) for k = 0, ..., K, the best accuracy A(S) of any set S "
        "of k pruned heads, where K is the number of heads that can be pruned (a layer's last head never is). "
        "No ranking can exceed it."
    ),
    "eq-pruning-random": (
        "The exact expected pruning curve of a uniformly random order: Abar_k = E_order[A(S_k(order))], the "
        "accuracy with the first k heads of the order pruned, averaged over all n! orders of the n heads (with "
        "the same rule for a layer's last head)."
    ),
    "eq-pruning-shapley": (
        "The exact Shapley value of head i in the game v(C) of the set C of kept heads: phi_i = "
        "sum_{C not containing i} |C|! (n - |C| - 1)!/n! [v(C union {i}) - v(C)]. The game used is minus the "
        "validation loss of the kept heads."
    ),
    "eq-pruning-auc": (
        "The area under a pruning curve, normalised by the number of steps: AUC = (1/K) sum_{k=1}^{K} "
        "(A_{k-1} + A_k)/2, the trapezoidal mean accuracy over k = 0, ..., K pruned heads."
    ),
    "eq-pruning-normalised": (
        "The normalised area under a pruning curve: nAUC = (AUC - AUC_random)/(AUC_best - AUC_random), which "
        "places a ranking's AUC (eq-pruning-auc) between the random expectation (eq-pruning-random) and the "
        "ceiling (eq-pruning-ceiling) of the same model and images: 0 for a ranking no better than chance, 1 "
        "for one that reaches the best subset at every k."
    ),
}

SECTIONS: dict[str, str] = {
    "sec-model-network": "book/model.md, 'The network'",
    "sec-model-hmc-heads": "book/model.md, 'The heads of the hidden-Markov-chain task'",
    "sec-head-scores": "book/theory.md, 'Order parameter and weights; head scores'",
    "sec-minimum": "book/theory.md, 'How the minimum is found'",
    "sec-prior-kernel": "book/theory.md, 'The network's prior kernel equals the GP kernel at any width'",
    "sec-hmc-task": "book/hmc.md, 'The task'",
    "sec-hmc-network": "book/hmc.md, 'The network and its four attention paths'",
    "sec-hmc-theory": "book/hmc.md, 'Theory, GP limit and posterior samples'",
    "sec-hmc-pcs": "book/hmc.md, 'Kernel principal components and the labels'",
    "sec-hmc-two-paths": "book/hmc.md, 'Noisier data, two paths (Figure 2e)'",
    "sec-hmc-sampler": "book/hmc.md, 'Sampler diagnostics'",
    "sec-depth-networks": "book/depth.md, 'Two networks with eight paths'",
    "sec-depth-theory": "book/depth.md, 'Theory, GP limit and posterior samples'",
    "sec-depth-claims": "book/depth.md, 'The claims, tested'",
    "sec-depth-sampler": "book/depth.md, 'Sampler diagnostics'",
    "sec-oneshot-data": "book/oneshot.md, 'The data set and the trained model'",
    "sec-oneshot-task": "book/oneshot.md, 'The task (Figure 3a)'",
    "sec-oneshot-theory": "book/oneshot.md, 'Theory, GP limit and posterior samples (Figure 3b)'",
    "sec-oneshot-replicates": "book/oneshot.md, 'Over trained models and draws of the training episodes'",
    "sec-oneshot-order-parameter": (
        "book/oneshot.md, 'The order parameter: theory, samples and gradient descent (Figure 3c)'"
    ),
    "sec-oneshot-saddle": "book/oneshot.md, 'Samples against the saddle point: the width and the entropy weight'",
    "sec-oneshot-exact": "book/oneshot.md, 'Small N: the exact finite-width mean'",
    "sec-oneshot-interplay": "book/oneshot.md, 'What the cross-path weights do'",
    "sec-oneshot-pcs": "book/oneshot.md, 'Kernel principal components and the labels (Figure 3d)'",
    "sec-oneshot-pruning": "book/oneshot.md, 'Head scores and pruning the trained model (Figures 3e and 3f)'",
    "sec-oneshot-little-loss": "book/oneshot.md, 'Little loss? The pruned model's accuracy in absolute terms'",
    "sec-oneshot-digits": "book/oneshot.md, 'Out-of-distribution digits'",
    "sec-oneshot-temperatures": "book/oneshot.md, 'The temperature grid'",
    "sec-pruning-task": "book/pruning.md, 'The task: handwritten digits as sequences of patches'",
    "sec-pruning-models": "book/pruning.md, 'Two trained models and their frozen attention'",
    "sec-pruning-rankings": "book/pruning.md, 'The rankings, stated before their results'",
    "sec-pruning-theory-scores": (
        "book/pruning.md, 'Theory scores that measure what pruning removes' (a paragraph of 'The rankings, "
        "stated before their results')"
    ),
    "sec-pruning-exact": "book/pruning.md, 'The exact optimum'",
    "sec-pruning-curves": "book/pruning.md, 'Pruning curves over training seeds'",
    "sec-pruning-verdicts": "book/pruning.md, 'Does the best theory score prune as well as the gradient importance?'",
    "sec-pruning-sensitivity": "book/pruning.md, 'How the theory rankings move with the temperature and the width'",
    "sec-pretrained": "book/pretrained.md, 'A pretrained transformer: MiniLM on movie reviews'",
    "sec-own-model": "book/own_model.md, 'Use the theory on your own model'",
    "sec-learning-curves": (
        "book/learning_curves.md, 'Learning curves: the theory from a hundred to a hundred thousand examples'"
    ),
    "sec-learning-gram": "book/learning_curves.md, 'Why a hundred thousand examples cost what a thousand do'",
    "sec-learning-threshold": (
        "book/learning_curves.md, 'When the interplay of paths helps: the interpolation threshold'"
    ),
    "sec-e2": "book/exchangeability.md, 'E2. Attention estimates the conditional mean of the value given the key'",
    "sec-r1": "book/related.md, 'R1. Pure attention loses rank doubly exponentially with depth'",
    "sec-r2": "book/related.md, 'R2. Dot-product attention is not Lipschitz; L2 attention is'",
    "sec-r3": "book/related.md, 'R3. On a compact set the Lipschitz constant grows like sqrt(n)'",
    "sec-repro-classes": "book/reproducibility.md, 'What reproduces on another machine'",
}

# The chapter that defines each equation label (by a ``:label:`` of a math directive or ``$$ ... $$ (label)``).
# The book is not installed with the package, so the pages are recorded here rather than found at run time.
_EQUATION_CHAPTERS: dict[str, tuple[str, ...]] = {
    "book/theory.md": (
        "eq-forward",
        "eq-path-features",
        "eq-path-form",
        "eq-kernel",
        "eq-action",
        "eq-entropy",
        "eq-readout",
        "eq-predictor",
        "eq-gp",
        "eq-sampled-u",
    ),
    "book/hmc.md": ("eq-exact-density",),
    "book/pruning.md": (
        "eq-pruning-mha",
        "eq-head-score",
        "eq-removal-score",
        "eq-action-change",
        "eq-action-gate",
        "eq-loo-score",
        "eq-trained-overlap",
        "eq-michel-importance",
        "eq-fisher-pruning",
        "eq-attention-entropy",
        "eq-value-norm",
        "eq-pruning-ceiling",
        "eq-pruning-random",
        "eq-pruning-shapley",
        "eq-pruning-auc",
        "eq-pruning-normalised",
    ),
}

CHAPTERS: dict[str, str] = {
    **{label: chapter for chapter, labels in _EQUATION_CHAPTERS.items() for label in labels},
    # a section's entry starts with its chapter file ("book/theory.md, 'title'")
    **{label: text.split(", ", 1)[0] for label, text in SECTIONS.items()},
}
"""The chapter file (``book/<name>.md``) that defines each label of ``EQUATIONS`` and ``SECTIONS``."""

_BUILT_BOOK = "_build/html"  # where `python -m attnpaths_book book` writes the HTML book (one page per toc file)


def _known(label: str) -> str:
    key = label.strip().strip("()")
    if key not in CHAPTERS:
        raise ValueError(
            f"unknown label {label!r}: the equation labels are listed in attnpaths.equations.EQUATIONS and the "
            "section labels in attnpaths.equations.SECTIONS"
        )
    return key


def location(label: str) -> tuple[str, str]:
    """Where a book label is defined: its anchor in the chapter file and in the built HTML book.

    Args:
        label: an ``eq-...`` or ``sec-...`` label, with or without its parentheses (``"(eq-action)"``).

    Returns:
        ``(source, html)``, e.g. ``("book/theory.md#eq-action", "_build/html/book/theory.html#equation-eq-action")``.
        Jupyter Book builds the chapter ``book/theory.md`` (toc entry ``book/theory``) into
        ``_build/html/book/theory.html``; there Sphinx gives a labelled equation the id ``equation-<label>`` and a
        section target the id ``<label>``.

    Raises:
        ValueError: for a label that is not listed in ``EQUATIONS`` or ``SECTIONS``.
    """
    key = _known(label)
    chapter = CHAPTERS[key]
    html_id = f"equation-{key}" if key in EQUATIONS else key
    return f"{chapter}#{key}", f"{_BUILT_BOOK}/{chapter.removesuffix('.md')}.html#{html_id}"


def describe(label: str) -> str:
    """The explanation of a book label cited in a docstring, and where to read it in the book.

    Args:
        label: an ``eq-...`` or ``sec-...`` label, with or without its parentheses (``"(eq-action)"``).

    Returns:
        An equation (``eq-...``) in words with its plain-text formula, or a section (``sec-...``) as its chapter
        file and title, followed by a line with its page and anchor (:func:`location`), e.g.
        ``Page: book/theory.md#eq-action (built book: _build/html/book/theory.html#equation-eq-action)``.

    Raises:
        ValueError: for a label that is not listed in ``EQUATIONS`` or ``SECTIONS``.
    """
    key = _known(label)
    source, html = location(key)
    return f"{EQUATIONS.get(key) or SECTIONS[key]}\nPage: {source} (built book: {html})"
