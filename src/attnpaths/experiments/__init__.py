"""The experiment layer: what every task's chapter does with a network of fixed attention on a data set.

It sits between the theory (``attention`` -> ``paths`` -> ``kernels`` -> ``action`` -> ``theory``; ``network``
-> ``sampler``) and the subjects (:mod:`attnpaths.hmc`, :mod:`attnpaths.oneshot`, :mod:`attnpaths.pruning`, ...),
which build their data, networks and figures on it and never import each other. It imports no subject.

Modules, one job each:

* :mod:`.path_data`  :class:`~.path_data.PathNetwork`, the base of a network with named paths and heads, and
  :class:`~.path_data.PathData`, its path features (eq-path-features) on a training set and named evaluation sets;
* :mod:`.sweep`      :class:`~.sweep.TheorySweep`, the theory (eq-action, eq-predictor) over widths and temperatures, the one
  sweep of the book (a loop, or one :mod:`attnpaths.engine` task per width);
* :mod:`.sampling`   posterior samples of the finite network (eq-sampled-u) and of the exact order-parameter density
  (eq-exact-density) at given widths, summarised with their Monte-Carlo errors;
* :mod:`.kernel_pcs` the kernel ``K(U)`` at a given ``U`` (eq-kernel): its mean predictor (eq-predictor), its principal
  components against the labels, the kernels of the appendix figures, kernel-target alignment;
* :mod:`.head_pruning` orders of heads and the accuracy of a model pruned along them (any model);
* :mod:`.finite_width` claims about finite width against the GP limit, for any task (eq-gp, eq-predictor);
* :mod:`.retraining`  claim R: retrained models against shipped ones of the same seeds;
* :mod:`.plots`      the figures every task draws: accuracy vs ``N``, ``U`` heat maps, PC overlaps, head scores.
"""
