"""Posterior samples at given widths: the finite network's weights (blocked Gibbs, :mod:`attnpaths.sampler`,
eq-sampled-u) and the exact finite-width density of the order parameters (:mod:`attnpaths.order_parameter_posterior`,
(eq-exact-density)), each summarised with its Monte-Carlo errors and the sampler's diagnostics; their plans,
records and comparisons with the saddle point.

``U`` matrices returned here are in figure order (the network's :attr:`~.path_data.PathNetwork.plot_order`).
"""

from ._exact import (
    ExactOrderParameter,
    exact_density_dimension,
    exact_order_parameter,
    exact_predictive_variance,
    finite_width_epsilon,
    scaled_width,
)
from ._network import PrecisionTarget, SampledPoint, accuracy_mc_sd, sample_posterior, variance_and_se
from ._records import (
    diagnostics_table,
    exact_record,
    finite_width_shift,
    kept_draws,
    largest_accuracy_difference,
    saddle_point_z_max,
    sampled_accuracy_record,
    sampler_record,
)
from ._widths import SamplingPlan, sample_networks, sample_width, sample_widths, sampling_plans

__all__ = [
    "ExactOrderParameter",
    "PrecisionTarget",
    "SampledPoint",
    "SamplingPlan",
    "accuracy_mc_sd",
    "diagnostics_table",
    "exact_density_dimension",
    "exact_order_parameter",
    "exact_predictive_variance",
    "exact_record",
    "finite_width_epsilon",
    "finite_width_shift",
    "kept_draws",
    "largest_accuracy_difference",
    "saddle_point_z_max",
    "sample_networks",
    "sample_posterior",
    "sample_width",
    "sample_widths",
    "sampled_accuracy_record",
    "sampler_record",
    "sampling_plans",
    "scaled_width",
    "variance_and_se",
]
