"""The HMC theory agrees with the numbers produced by running the authors' theory code
(attnpaths.hmc.authors_reference), and the comparison is sharp enough to notice a small change."""

import dataclasses
import json

import pytest
import torch

from attnpaths.hmc import authors_reference as ar
from attnpaths.hmc.bands import PAPER_TEMPERATURE

pytestmark = pytest.mark.cross_machine


@pytest.fixture(scope="module")
def reference():
    return ar.load_authors_reference()


@pytest.fixture(scope="module")
def quantities(reference):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return ar.reference_quantities(reference)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def rows(quantities, reference):
    return ar.compare_with_authors(**quantities, reference=reference)


def _outside(rows):
    return [r for r in rows if not r.within]


def test_reference_is_package_data_with_both_networks(reference):
    assert "authors' code" in reference["about"]
    for key in ("four_path", "two_path_sigma_perp_5"):
        assert reference[key]["widths"] == [10, 30, 50, 100, 300, 500, 1000]
    # the packaged file is plain JSON that round-trips
    assert json.loads(json.dumps(reference)) == reference


def test_every_reference_number_has_a_row(rows, reference):
    four, two = reference["four_path"], reference["two_path_sigma_perp_5"]
    n_w = len(four["widths"])
    expected_four = (
        n_w * (2 + len(four["U"]))
        + len(four["gp_accuracy_percent"])
        + 3 * (len(four["U_layer2"]) - 1)
        + len(four["action_over_width_at_minimum"])
        + sum(len(v) for v in four["kernel_pc_label_overlap_first10"].values())
        + 4 * (len(four["head_scores"]) - 1)
    )
    expected_two = n_w * (2 + len(two["U"])) + len(two["gp_accuracy_percent"])
    assert sum(r.network == "four_path" for r in rows) == expected_four
    assert sum(r.network == "two_path_sigma_perp_5" for r in rows) == expected_two


def test_every_row_is_within_its_precision(rows):
    outside = _outside(rows)
    assert not outside, "rows differing from the authors' code beyond their precision: " + "; ".join(
        f"{r.network} {r.quantity} N={r.width}: authors {r.authors}, package {r.package:.6g}, "
        f"|difference| {r.difference:.3g} > {r.precision:.3g}"
        for r in outside
    )
    assert ar.worst_row(rows).ratio <= 1


def test_precisions_are_the_stated_ones(rows):
    by_kind = {}
    for r in rows:
        kind = (
            "accuracy"
            if "accuracy" in r.quantity
            else "U"
            if r.quantity.startswith("U")
            else "action"
            if r.quantity == "S/N"
            else "value"
        )
        by_kind.setdefault(kind, set()).add(r.precision)
    assert by_kind["accuracy"] == {0.05}
    assert by_kind["U"] == {5e-4 + 2.1e-4}
    assert by_kind["value"] == {5e-4}
    # the action: printed to 9 decimals, plus the Adam endpoint's excess for 4x4 + 2x2 order-parameter entries
    (action,) = by_kind["action"]
    assert action == pytest.approx(5e-10 + 20 * 1e-5 * 2.1e-4 / 2, rel=1e-12)


def test_accuracies_agree_exactly(rows):
    # counts of 1000 test sequences: the package's percentages are the authors' to floating-point noise
    for r in rows:
        if "accuracy" in r.quantity:
            assert r.difference < 1e-9, r


def test_action_is_per_width_and_above_the_minimum(rows):
    """The reference's S/N is the package's action divided by the width; the authors' value (an Adam endpoint)
    is never below the package's minimum by more than its printed rounding."""
    actions = [r for r in rows if r.quantity == "S/N"]
    assert len(actions) == 7
    for r in actions:
        assert r.authors - r.package >= -5e-10, r


def test_scaled_U_falls_outside(quantities, reference):
    four = quantities["four_path"]
    changed = dict(quantities, four_path=dataclasses.replace(four, U=four.U * 1.01))
    rows = ar.compare_with_authors(**changed, reference=reference)
    outside = _outside(rows)
    assert outside and all(r.network == "four_path" and r.quantity.startswith("U_") for r in outside)
    # every entry whose 1 % change is twice its precision is noticed
    for r in rows:
        if (
            r.network == "four_path"
            and r.quantity.startswith("U_")
            and "layer2" not in r.quantity
            and r.quantity != "U_a"
            and 0.01 * abs(r.authors) > 2 * r.precision
        ):
            assert not r.within, r


@pytest.mark.usefixtures("long_computation")
def test_doubled_temperature_falls_outside(reference):
    changed = ar.reference_quantities(reference, temperature=2 * PAPER_TEMPERATURE)
    rows = ar.compare_with_authors(**changed, reference=reference)
    outside = {r.quantity for r in _outside(rows)}
    assert "S/N" in outside and "accuracy (%)" in outside and "U_gd" in outside
    assert len(_outside(rows)) > len(rows) // 2


def test_adam_action_excess_bound():
    assert ar.adam_action_excess(20) == pytest.approx(2.1e-8)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_parameters"):
            ar.adam_action_excess(bad)


def test_bad_inputs_name_the_argument(quantities, reference):
    q = quantities
    with pytest.raises(ValueError, match="four_path"):
        ar.compare_with_authors(**dict(q, four_path="curve"), reference=reference)
    with pytest.raises(ValueError, match="two_path"):
        ar.compare_with_authors(**dict(q, two_path=q["four_path"]), reference=reference)
    with pytest.raises(ValueError, match="gp_accuracy"):
        ar.compare_with_authors(**dict(q, gp_accuracy={"all": 0.8}), reference=reference)
    with pytest.raises(ValueError, match="overlaps"):
        ar.compare_with_authors(**dict(q, overlaps={"gp": [0.1]}), reference=reference)
    with pytest.raises(ValueError, match="overlaps"):
        short = {"finite_width": q["overlaps"]["finite_width"][:3], "gp": q["overlaps"]["gp"][:3]}
        ar.compare_with_authors(**dict(q, overlaps=short), reference=reference)
    with pytest.raises(ValueError, match="head_scores"):
        ar.compare_with_authors(**dict(q, head_scores=q["head_scores"][:2]), reference=reference)
    with pytest.raises(ValueError, match="reference"):
        ar.compare_with_authors(**q, reference={"four_path": {}})
    with pytest.raises(ValueError, match="temperature"):
        ar.reference_quantities(reference, temperature=0.0)
    with pytest.raises(ValueError, match="rows"):
        ar.worst_row([])


def test_curve_on_other_widths_or_test_set_is_refused(quantities, reference):
    four = quantities["four_path"]
    fewer = dataclasses.replace(
        four,
        widths=four.widths[:3],
        accuracy={"test": four.accuracy["test"][:3]},
        U=four.U[:3],
        means={"test": four.means["test"][:3]},
    )
    with pytest.raises(ValueError, match="four_path must be solved at the reference widths"):
        ar.compare_with_authors(**dict(quantities, four_path=fewer), reference=reference)
    short = dataclasses.replace(four, means={"test": four.means["test"][..., :200]})
    with pytest.raises(ValueError, match="four_path must be evaluated on the reference's 1000 test sequences"):
        ar.compare_with_authors(**dict(quantities, four_path=short), reference=reference)
    with pytest.raises(ValueError, match="four_path must be a TheorySweep at one temperature with its GP limit"):
        ar.compare_with_authors(**dict(quantities, four_path=dataclasses.replace(four, gp=None)), reference=reference)


# ------------------------------------------------------------------------------------ as the chapter shows it
def test_chapter_curves_in_the_reference_configuration_must_be_the_compared_ones(quantities):
    four, two = quantities["four_path"], quantities["two_path"]
    same = dict(num_train=ar.REFERENCE_NUM_TRAIN, num_test=ar.REFERENCE_NUM_TEST, temperature=PAPER_TEMPERATURE)
    assert ar.chapter_mismatches(four, two, quantities, **same) == []
    # the chapter's 2-path U 0.1 % off at every width: each width is named
    scaled = dataclasses.replace(two, U=two.U * 1.001)
    mismatches = ar.chapter_mismatches(four, scaled, quantities, **same)
    assert len(mismatches) == len(two.widths) and all(m.startswith("two_path U at N=") for m in mismatches)
    # a chapter in another configuration (its smoke test set) is not compared
    assert ar.chapter_mismatches(four, scaled, quantities, **dict(same, num_test=200)) == []
    with pytest.raises(ValueError, match="inputs"):
        ar.chapter_mismatches(four, two, {"four_path": four}, **same)
    with pytest.raises(ValueError, match="atol"):
        ar.chapter_mismatches(four, two, quantities, **same, atol=0.0)


def test_the_comparison_as_text(rows):
    assert ar.disagreements(rows) == []
    row = next(r for r in rows if r.quantity == "U_gd" and r.width == 10 and r.network == "four_path")
    off = dataclasses.replace(row, package=row.authors + 0.01, within=False)
    (text,) = ar.disagreements([off, row])
    assert text.startswith("four_path U_gd N=10: authors ") and "> precision 0.00071" in text
    assert ar.row_description(row) == "4 paths, U_gd at N = 10"
    gp_row = next(r for r in rows if r.width is None and r.network == "two_path_sigma_perp_5")
    assert ar.row_description(gp_row) == "2 paths, noisier data, GP accuracy (%), paths g+d"
    lines = ar.markdown_table(rows).split("\n")
    assert len(lines) == len(rows) + 2 and all(line.count(" | ") == 5 for line in lines[2:])
    action = next(line for line in lines if "S/N | 10 |" in line)
    package = action.split(" | ")[3]
    assert len(package.split(".")[1]) == 10  # S/N to 1e-10
    assert any(line.startswith("| 2 paths, noisier data: GP accuracy (%), paths g+d | GP |") for line in lines)
