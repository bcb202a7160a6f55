"""Deeper networks on the hidden-Markov-chain task (the ``depth`` chapter): networks with coded heads beyond the
paper's, their figures and their claims.

* :mod:`.networks` three layers of two heads and two layers with four heads in layer 1, built from the task's
  coded heads; the class separation of every path;
* :mod:`.plots`    their figures (the coded network, the path separation, ``U`` per network);
* :mod:`.claims`   the finite-width claims asked of them and the cross-path weights (sec-depth-claims).
"""
