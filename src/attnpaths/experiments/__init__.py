"""The experiment layer: what every task's chapter does with a network of fixed attention on a data set.

It sits between the theory (``attention`` -> ``paths`` -> ``kernels`` -> ``action`` -> ``theory``; ``network``
-> ``sampler``) and the tasks (:mod:`attnpaths.hmc`, :mod:`attnpaths.oneshot`), which build their data,
networks and figures on it and never import each other. It imports no task.

Modules, one job each:

* :mod:`.path_data`  :class:`~.path_data.PathNetwork`, the base of a network with named paths and heads, and
  :class:`~.path_data.PathData`, its path features (eq-path-features) on a training set and named evaluation sets;
* :mod:`.sweep`      :class:`~.sweep.TheorySweep`, the theory (eq-action, eq-predictor) over widths and temperatures, the one
  sweep of the book (a loop, or one :mod:`attnpaths.engine` task per width);
* :mod:`.sampling`   posterior samples of the finite network (eq-sampled-u) and of the exact order-parameter density
  (eq-exact-density) at given widths, summarised with their Monte-Carlo errors;
* :mod:`.kernel_pcs` the kernel ``K(U)`` at a given ``U`` (eq-kernel): its mean predictor (eq-predictor), its principal
  components against the labels, the kernels of the appendix figures, kernel-target alignment;
* :mod:`.plots`      the figures both tasks draw: accuracy vs ``N``, ``U`` heat maps, PC overlaps.
"""
