"""The experiment layer: what every task's chapter does with a network of fixed attention on a data set.

It sits between the theory (``attention`` -> ``paths`` -> ``kernels`` -> ``action`` -> ``theory``; ``network``
-> ``sampler``) and the subjects (:mod:`attnpaths.hmc`, :mod:`attnpaths.oneshot`, :mod:`attnpaths.pruning`, ...),
which build their data, networks and figures on it and never import each other. It imports no subject; each of
its modules has one job, which its docstring names.
"""
