"""Agreement of the HMC theory with numbers produced by running the authors' theory code.

``authors_code_reference.json`` (package data) holds the outputs of the authors' public theory code on the
HMC task (its ``about`` field says how they were produced); they are outputs of that code, not numbers
printed in the paper. This module loads them (:func:`load_authors_reference`), recomputes the package's
counterparts in the reference's configuration (:func:`reference_quantities`) and compares the two, row by
row, each within the precision the reference's printed digits allow (:func:`compare_with_authors`).

Precisions (the half-width of the interval a printed value stands for, plus what the authors' solver leaves):

* accuracies (percent of the 1000 test sequences, rounded to 0.1): :data:`ACCURACY_HALF_UNIT`;
* ``U``, ``U_a``, the layer-2 order parameter, kernel-PC overlaps and head scores (rounded to 3 decimals):
  :data:`VALUE_HALF_UNIT`; for the order parameters themselves (``U``, ``U_a``, layer-2 ``U``) plus
  :data:`ADAM_ENDPOINT_DISTANCE`, the distance between the authors' Adam endpoint and the exact minimum that
  the reference states at ``N = 10``. It is applied to every run: with the same gradient tolerance an
  endpoint lies at most about ``tolerance / curvature`` from the minimum, and the 4-path network at
  ``N = 10`` is the flattest of all runs (smallest Hessian eigenvalue of ``S / N`` at the minimum 0.013,
  against at least 0.025 at the other widths and at least 0.17 for the 2-path network; Adam also needs the
  most steps there);
* the action: half the last printed digit plus :func:`adam_action_excess`, what an endpoint that close to
  the minimum with that gradient adds to ``S / N``.

Convention of the action: the reference's ``action_over_width_at_minimum`` is ``S / N``, the package's action
(:attr:`attnpaths.theory.TheorySolution.action`, eq-action, no constants added) divided by the common width
``N`` of all layers (the authors' loss is the action divided by the largest width).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from .._validation import as_float64_array, positive_int, positive_real
from ..experiments.kernel_pcs import pc_overlaps
from ..experiments.path_data import path_data
from ..experiments.sweep import TheorySweep, head_score_curve, theory_sweep
from .bands import NOISY_SIGMA_PERP, PAPER_TEMPERATURE, gp_lines
from .data import paper_test_set, paper_train_set
from .networks import four_path_network, two_path_network

#: File name of the reference, package data of :mod:`attnpaths.hmc`.
REFERENCE_FILE = "authors_code_reference.json"
#: Half of the last rounded digit of an accuracy in percent (rounded to 0.1 percentage points).
ACCURACY_HALF_UNIT = 0.05
#: Half of the last rounded digit of ``U``, ``U_a``, overlaps and head scores (rounded to 3 decimals).
VALUE_HALF_UNIT = 5e-4
#: The reference's bound on the distance between the authors' Adam endpoint and the exact minimum.
ADAM_ENDPOINT_DISTANCE = 2.1e-4
#: The gradient tolerance at which the authors' Adam stops (``max |grad| < 1e-5`` of the loss ``S / N``).
ADAM_GRADIENT_TOLERANCE = 1e-5
#: Number of test sequences behind the reference's accuracies.
REFERENCE_NUM_TEST = 1000
#: Number of training sequences of the reference's runs.
REFERENCE_NUM_TRAIN = 100
#: Width of the reference's kernel-PC overlaps.
PC_WIDTH = 10

_GP_KEYS = {"all": "all paths", "g": "path g", "g+d": "paths g+d"}
_NETWORKS = {"four_path": ("g", "d", "a1", "a2"), "two_path_sigma_perp_5": ("g", "d")}


@dataclass(frozen=True)
class AuthorsCodeRow:
    """One number of the authors' code next to the package's.

    Attributes:
        network: ``"four_path"`` or ``"two_path_sigma_perp_5"`` (the reference's keys).
        quantity: e.g. ``"accuracy (%)"``, ``"U_gd"``, ``"U_a"``, ``"S/N"``, ``"GP accuracy (%), path g"``,
            ``"PC 3 overlap, GP"``, ``"head score, layer 2 blank"``.
        width: ``N`` (every layer); ``None`` for a GP-limit quantity.
        authors: the reference's (rounded) value.
        package: the package's value, in the same units.
        precision: the largest ``|authors - package|`` the rounding and the authors' solver allow.
        within: ``|authors - package| <= precision``.
    """

    network: str
    quantity: str
    width: int | None
    authors: float
    package: float
    precision: float
    within: bool

    @property
    def difference(self) -> float:
        """``|authors - package|``."""
        return abs(self.authors - self.package)

    @property
    def ratio(self) -> float:
        """``|authors - package| / precision`` (at most 1 for a row within its precision)."""
        return self.difference / self.precision


def load_authors_reference() -> dict:
    """The reference (package data ``attnpaths/hmc/authors_code_reference.json``) as a dict.

    Keys: ``about`` (provenance), ``path_order``, ``four_path``, ``two_path_sigma_perp_5`` (each with
    ``widths`` ``[7]``, ``theory_accuracy_percent`` ``[7]``, ``gp_accuracy_percent``, ``U`` (entry name ->
    ``[7]``, figure order g, d, a1, a2), ``U_a`` ``[7]``; the 4-path network also ``U_layer2``,
    ``action_over_width_at_minimum``, ``kernel_pc_label_overlap_first10``, ``head_scores``) and
    ``original_solver_cost``.
    """
    text = resources.files("attnpaths.hmc").joinpath(REFERENCE_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def adam_action_excess(num_parameters: int) -> float:
    """Bound on ``S / N`` at the authors' Adam endpoint minus its minimum.

    Near the minimum ``x*`` the loss is quadratic, ``S(x) / N = S* / N + (x - x*)^T H (x - x*) / 2`` with
    gradient ``g = H (x - x*)``, so the excess is ``g . (x - x*) / 2 <= num_parameters * max|g| * max|x - x*| / 2``
    with ``max|g| <`` :data:`ADAM_GRADIENT_TOLERANCE` (the authors' stopping rule) and ``max|x - x*| <=``
    :data:`ADAM_ENDPOINT_DISTANCE` (the parameters Adam moves are the entries of the order parameters).

    Args:
        num_parameters: entries of the order parameters (``n_1^2 + n_2^2``; 20 for the 4-path network).
    """
    num_parameters = positive_int(num_parameters, "num_parameters")
    return num_parameters * ADAM_GRADIENT_TOLERANCE * ADAM_ENDPOINT_DISTANCE / 2


def _printed_half_unit(values) -> float:
    """Half of the last digit of the printed values (the longest decimal expansion among them: JSON drops
    trailing zeros, so ``8.42037115`` printed to 9 decimals reads with 8)."""
    decimals = max(len(repr(float(v)).split(".")[1]) if "e" not in repr(float(v)) else 0 for v in values)
    return 0.5 * 10.0**-decimals


def _check_curve(curve, name: str, widths, names) -> None:
    if not isinstance(curve, TheorySweep) or curve.temperatures.size != 1 or curve.gp is None:
        raise ValueError(
            f"{name} must be a TheorySweep at one temperature with its GP limit, got {type(curve).__name__}"
        )
    missing = [w for w in widths if w not in curve.widths]
    if missing:
        raise ValueError(f"{name} must be solved at the reference widths {list(widths)}, missing {missing}")
    if tuple(curve.names) != tuple(names):
        raise ValueError(f"{name} must have the paths {names} (figure order), got {curve.names}")
    num_test = curve.means["test"].shape[-1]
    if num_test != REFERENCE_NUM_TEST:
        raise ValueError(
            f"{name} must be evaluated on the reference's {REFERENCE_NUM_TEST} test sequences, got {num_test}"
        )


def _entry(key: str, names) -> tuple[int, int]:
    for i, a in enumerate(names):
        if key.startswith(a) and key[len(a) :] in names:
            return i, names.index(key[len(a) :])
    raise ValueError(f"reference entry U[{key!r}] does not name two paths of {names}")


def compare_with_authors(
    four_path: TheorySweep,
    two_path: TheorySweep,
    gp_accuracy: dict,
    overlaps: dict,
    head_scores,
    *,
    reference: dict | None = None,
) -> list[AuthorsCodeRow]:
    """Every number of the reference next to the package's, each with its precision (see the module).

    Args:
        four_path: :func:`~attnpaths.experiments.sweep.theory_sweep` of the 4-path network on the authors' data
            (train seed 27, ``P = 100``; test seed 59, 1000 sequences) at ``T = 0.01`` with its GP limit, solved
            at least at the reference's widths; figure order g, d, a1, a2.
        two_path: the same for the 2-path network on the ``sigma_perp = 5`` data (paths g, d).
        gp_accuracy: :func:`~attnpaths.hmc.bands.gp_lines` on the authors' data, ``{"all", "g", "g+d"}``
            accuracies as fractions.
        overlaps: :func:`~attnpaths.experiments.kernel_pcs.pc_overlaps` at ``N = 10`` (4-path network), with
            ``"finite_width"`` and ``"gp"`` ``[k]``, ``k >= 10``.
        head_scores: :func:`~attnpaths.experiments.sweep.head_score_curve` of ``four_path``, ``[n_w, 2, 2]``
            (layer, head) in the order of ``four_path.widths``.
        reference: default :func:`load_authors_reference`.

    Returns:
        one :class:`AuthorsCodeRow` per reference number (accuracies, GP accuracies, ``U`` entries, ``U_a``;
        for the 4-path network also the layer-2 ``U``, ``S / N``, PC overlaps and head scores).
    """
    reference = load_authors_reference() if reference is None else reference
    if not isinstance(reference, dict) or any(key not in reference for key in _NETWORKS):
        raise ValueError(f"reference must be a dict with the keys {list(_NETWORKS)}")
    curves = {"four_path": four_path, "two_path_sigma_perp_5": two_path}
    for (key, names), name in zip(_NETWORKS.items(), ("four_path", "two_path")):
        _check_curve(curves[key], name, reference[key]["widths"], names)
    if not isinstance(gp_accuracy, dict) or not set(_GP_KEYS) <= set(gp_accuracy):
        raise ValueError(f"gp_accuracy must be a dict with the keys {list(_GP_KEYS)}, got {gp_accuracy!r}")
    if not isinstance(overlaps, dict) or any(key not in overlaps for key in ("finite_width", "gp")):
        raise ValueError("overlaps must be the dict of pc_overlaps, with the keys 'finite_width' and 'gp'")
    fw_overlaps = as_float64_array(overlaps["finite_width"], "overlaps['finite_width']")
    gp_overlaps = as_float64_array(overlaps["gp"], "overlaps['gp']")
    scores = as_float64_array(head_scores, "head_scores")
    if scores.shape != (len(four_path.widths), 2, 2):
        raise ValueError(
            f"head_scores must have shape [{len(four_path.widths)}, 2, 2] (the widths of four_path), got {scores.shape}"
        )
    rows = [row for key in _NETWORKS for row in _curve_rows(key, reference[key], curves[key], gp_accuracy)]
    return rows + _four_path_rows(reference["four_path"], four_path, {"N=10": fw_overlaps, "GP": gp_overlaps}, scores)


def _row(network, quantity, width, authors, package, precision) -> AuthorsCodeRow:
    authors, package = float(authors), float(package)
    width = None if width is None else int(width)
    return AuthorsCodeRow(
        network, quantity, width, authors, package, float(precision), bool(abs(authors - package) <= precision)
    )


def _curve_rows(key: str, ref: dict, curve: TheorySweep, gp_accuracy: dict) -> list[AuthorsCodeRow]:
    """The rows of one network's theory curve: accuracy, ``U`` and ``U_a`` per width, then its GP lines."""
    names, rows = _NETWORKS[key], []
    u_precision = VALUE_HALF_UNIT + ADAM_ENDPOINT_DISTANCE
    for k, width in enumerate(ref["widths"]):
        i = curve.index(width)
        accuracy = 100 * curve.accuracy["test"][i, 0]
        rows.append(_row(key, "accuracy (%)", width, ref["theory_accuracy_percent"][k], accuracy, ACCURACY_HALF_UNIT))
        U = curve.U_at(width)
        for entry, values in ref["U"].items():
            a, b = _entry(entry, names)
            rows.append(_row(key, f"U_{entry}", width, values[k], U[a, b], u_precision))
        rows.append(_row(key, "U_a", width, ref["U_a"][k], curve.U_a[i, 0], u_precision))
    for line, label in _GP_KEYS.items():
        if label in ref["gp_accuracy_percent"]:
            package = gp_accuracy[line] if key == "four_path" else curve.gp.accuracy["test"][0, 0]
            authors = ref["gp_accuracy_percent"][label]
            rows.append(_row(key, f"GP accuracy (%), {label}", None, authors, 100 * package, ACCURACY_HALF_UNIT))
    return rows


def _four_path_rows(ref: dict, four_path: TheorySweep, overlaps: dict, scores) -> list[AuthorsCodeRow]:
    """The 4-path network's further rows: the layer-2 ``U``, ``S / N``, the PC overlaps and the head scores."""
    key, rows = "four_path", []
    u_precision = VALUE_HALF_UNIT + ADAM_ENDPOINT_DISTANCE
    heads = ref["U_layer2"]["head_order"].split("[")[1].rstrip("]").split(", ")
    for width, matrix in ref["U_layer2"].items():
        if width == "head_order":
            continue
        U2 = four_path.U_layers[1][four_path.index(int(width)), 0]
        for a in range(2):
            for b in range(a, 2):
                rows.append(
                    _row(key, f"U_layer2[{heads[a]}, {heads[b]}]", int(width), matrix[a][b], U2[a, b], u_precision)
                )
    actions = ref["action_over_width_at_minimum"]
    action_precision = _printed_half_unit(actions.values()) + adam_action_excess(
        sum(U[0, 0].size for U in four_path.U_layers)
    )
    for width, value in actions.items():
        N = int(width)
        rows.append(_row(key, "S/N", N, value, four_path.action[four_path.index(N), 0] / N, action_precision))
    for label, package in overlaps.items():
        authors = ref["kernel_pc_label_overlap_first10"][label]
        if package.shape[0] < len(authors):
            raise ValueError(f"overlaps must hold at least {len(authors)} PCs, got {package.shape[0]}")
        width = PC_WIDTH if label == "N=10" else None
        rows += [
            _row(key, f"PC {j + 1} overlap, {label}", width, v, package[j], VALUE_HALF_UNIT)
            for j, v in enumerate(authors)
        ]
    order = ref["head_scores"]["order"]
    for width, values in ref["head_scores"].items():
        if width == "order":
            continue
        flat = scores[four_path.index(int(width))].reshape(-1)
        for name, value, package in zip(order, values, flat):
            rows.append(_row(key, f"head score, {name}", int(width), value, package, VALUE_HALF_UNIT))
    return rows


def reference_quantities(reference: dict | None = None, *, temperature: float = PAPER_TEMPERATURE) -> dict:
    """The package's inputs of :func:`compare_with_authors` in the reference's configuration: the authors'
    training set (``P = 100``) and test set (1000 sequences), the reference's widths, ``T = temperature``.

    Returns:
        ``{"four_path", "two_path", "gp_accuracy", "overlaps", "head_scores"}`` (keyword arguments of
        :func:`compare_with_authors`); about 7 solves per network plus the three GP lines.
    """
    reference = load_authors_reference() if reference is None else reference
    temperature = positive_real(temperature, "temperature")
    train, test = paper_train_set(REFERENCE_NUM_TRAIN), paper_test_set(REFERENCE_NUM_TEST)
    data4 = path_data(four_path_network(train), train, test)
    four = theory_sweep(data4, reference["four_path"]["widths"], [temperature], gp_limit=True, progress=False)
    train2 = paper_train_set(REFERENCE_NUM_TRAIN, sigma_perp=NOISY_SIGMA_PERP)
    test2 = paper_test_set(REFERENCE_NUM_TEST, sigma_perp=NOISY_SIGMA_PERP)
    data2 = path_data(two_path_network(train2), train2, test2)
    two = theory_sweep(
        data2, reference["two_path_sigma_perp_5"]["widths"], [temperature], gp_limit=True, progress=False
    )
    num_pcs = len(reference["four_path"]["kernel_pc_label_overlap_first10"]["GP"])
    return {
        "four_path": four,
        "two_path": two,
        "gp_accuracy": gp_lines(train, test, temperature, data=data4),
        "overlaps": pc_overlaps(data4, four.U[four.index(PC_WIDTH), 0], num_pcs),
        "head_scores": head_score_curve(four, data4.network.heads),
    }


def worst_row(rows) -> AuthorsCodeRow:
    """The row with the largest ``|difference| / precision``."""
    rows = list(rows)
    if not rows or not all(isinstance(r, AuthorsCodeRow) for r in rows):
        raise ValueError("rows must be a non-empty list of AuthorsCodeRow")
    return max(rows, key=lambda r: r.ratio)


# --------------------------------------------------------------------------------------------------------
# the comparison as the chapter shows it


#: How the chapter names the reference's networks.
NETWORK_LABELS = {"four_path": "4 paths", "two_path_sigma_perp_5": "2 paths, noisier data"}


def chapter_mismatches(
    four_path: TheorySweep,
    two_path: TheorySweep,
    inputs: dict,
    *,
    num_train: int,
    num_test: int,
    temperature: float,
    atol: float = 1e-10,
) -> list[str]:
    """Widths at which a chapter's own theory curves differ from those compared with the authors' code.

    When the chapter runs in the reference's configuration (``num_train`` = :data:`REFERENCE_NUM_TRAIN`,
    ``num_test`` = :data:`REFERENCE_NUM_TEST`, ``temperature`` = the paper's), its curves must give the ``U`` of
    ``inputs`` (:func:`reference_quantities`) at every width both solved; in another configuration there is
    nothing to compare.

    Args:
        four_path, two_path: the chapter's curves (figure order, one temperature).
        inputs: :func:`reference_quantities`.
        atol: the largest absolute difference of an entry of ``U`` taken as the same solution.

    Returns:
        one description per (network, width) whose ``U`` differs by more than ``atol`` (empty: none).
    """
    atol = positive_real(atol, "atol")
    if not isinstance(inputs, dict) or any(key not in inputs for key in ("four_path", "two_path")):
        raise ValueError("inputs must be the dict of reference_quantities, with the keys 'four_path' and 'two_path'")
    if (num_train, num_test, temperature) != (REFERENCE_NUM_TRAIN, REFERENCE_NUM_TEST, PAPER_TEMPERATURE):
        return []
    mismatches = []
    for name, chapter, compared in (
        ("four_path", four_path, inputs["four_path"]),
        ("two_path", two_path, inputs["two_path"]),
    ):
        for w in sorted(set(chapter.widths.tolist()) & set(compared.widths.tolist())):
            difference = float(abs(chapter.U_at(w) - compared.U_at(w)).max())
            if not difference <= atol:
                mismatches.append(f"{name} U at N={w}: largest difference {difference:.3g} > {atol:.0e}")
    return mismatches


def disagreements(rows) -> list[str]:
    """One description per row outside its precision (empty: every row agrees with the authors' code)."""
    return [
        f"{r.network} {r.quantity} N={r.width}: authors {r.authors}, package {r.package:.6g}, |difference| "
        f"{r.difference:.3g} > precision {r.precision:.3g}"
        for r in rows
        if not r.within
    ]


def row_description(row: AuthorsCodeRow) -> str:
    """``"<network label>, <quantity>[ at N = <width>]"``, e.g. ``"4 paths, U_gd at N = 10"``."""
    return f"{NETWORK_LABELS[row.network]}, {row.quantity}" + ("" if row.width is None else f" at N = {row.width}")


def _package_text(row: AuthorsCodeRow) -> str:
    if row.quantity == "S/N":
        return f"{row.package:.10f}"
    return f"{row.package:.2f}" if "accuracy" in row.quantity else f"{row.package:.5f}"


def markdown_table(rows) -> str:
    """Markdown table of the comparison, one line per row: network and quantity, ``N`` (``GP`` for a GP-limit
    quantity), the authors' value, the package's (to the digits that the precision makes meaningful:
    accuracies to 0.01, ``S/N`` to 1e-10, the rest to 1e-5), ``|difference|`` and the precision."""
    lines = [
        "| quantity | N | authors' code | this package | \\|difference\\| | precision |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {NETWORK_LABELS[r.network]}: {r.quantity} | {'GP' if r.width is None else r.width} | "
            f"{r.authors:.10g} | {_package_text(r)} | {r.difference:.1e} | {r.precision:.2g} |"
        )
    return "\n".join(lines)
