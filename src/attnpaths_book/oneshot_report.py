"""The one-shot chapter's descriptions and tables, made from its results: the data set, the measured cost of
the authors' training, the temperatures chosen per width, the sampler's diagnostics, the time per stage and the
replicates over trained models and draws of the training episodes.

Every function returns plain data or MyST Markdown (pipe tables, bullet lists) and computes nothing that it
does not show; the chapter glues the Markdown for its prose
(:meth:`attnpaths_book.recorder.ChapterRecorder.markdown`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from attnpaths.claims import Outcome
from attnpaths.oneshot.claims import order_parameter_name
from attnpaths.oneshot.digits import DigitPairs
from attnpaths.oneshot.imagesets import SPLITS, ImageDataset

from ._report_tables import markdown_table
from .claims_markdown import escape_markdown
from .records import read_record

DIGITS_SOURCE = "sklearn.datasets.load_digits"


def _percent(fraction) -> str:
    return f"{100 * float(fraction):.1f} %"


class StageClock:
    """Wall-clock seconds of the stages of a chapter run (data, training, episodes, theory, sampling,
    pruning), measured between laps: :meth:`lap` ``(stage)`` charges the time since the clock started or since the previous lap to
    ``stage``; :meth:`lap` ``()`` starts a new interval without charging one."""

    def __init__(self):
        self.started = self.last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def lap(self, stage: str | None = None) -> float:
        """Seconds since the previous lap, charged to ``stage`` (none: not charged)."""
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        if stage is not None:
            self.seconds[stage] = elapsed
        return elapsed

    def total(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.started


def data_set_description(dataset: ImageDataset, digits: DigitPairs, *, instances_per_class: int, seed: int) -> dict:
    """The data set of a chapter run (sec-oneshot-data): its source, image size, per split the alphabets and
    the number of classes, and the out-of-distribution digits.

    Returns:
        The description,
        ``{"source", "instances_per_class", "image_size", "seed", "splits": {split: {"alphabets",
        "num_alphabets", "num_classes"}}, "ood": {"digits", "support_per_digit", "queries", "source"}}``.
    """
    splits = {}
    for split in SPLITS:
        classes = dataset.split(split)
        names = sorted(set(classes.alphabets))
        splits[split] = {"alphabets": names, "num_alphabets": len(names), "num_classes": classes.num_classes}
    return {
        "source": dataset.parameters.get("source"),
        "instances_per_class": instances_per_class,
        "image_size": dataset.train.image_size,
        "seed": seed,
        "splits": splits,
        "ood": {
            "digits": list(digits.digits),
            "support_per_digit": int(digits.support.shape[1]),
            "queries": int(digits.queries.shape[0]),
            "source": DIGITS_SOURCE,
        },
    }


def training_cost(record_paths) -> tuple[str, dict]:
    """The measured cost of the authors' training run (``python -m attnpaths_book bench training``), one bullet per
    device with the measurement's provenance, or the command that measures it where no record exists.

    Args:
        record_paths: ``{device: path of its benchmark record}`` (``"cpu"``, ``"cuda"``).

    Returns:
        ``(markdown, costs)``, ``costs[device] = {"median_step_s", "validation_s", "projected_total_hours",
        "commit"}`` for every measured device.
    """
    lines, costs = [], {}
    for device, path in record_paths.items():
        if not Path(path).is_file():
            lines.append(
                f"- {device.upper()}: not measured yet (`python -m attnpaths_book bench training "
                f"--device {device} --output {path}`)."
            )
            continue
        record = read_record(path)
        run = record["report"]
        where = run["device_name"] or f"{record['machine']['cpu_count']} CPU cores"
        lines.append(
            f"- {device.upper()} ({where}, {run['num_threads']} torch threads, torch "
            f"{record['versions'].get('torch')}, commit {(record['commit'] or 'unknown')[:10]}"
            f"{' with local changes' if record.get('commit_dirty') else ''}, "
            f"{record['finished_utc'][:10]}): {run['median_step_s']:.3g} s a step (median of "
            f"{run['timed_steps']}), {run['validation_s']:.3g} s a validation pass; "
            f"{run['config']['steps']} steps and {run['num_validations']} validations: "
            f"**{run['projected_total_hours']:.3g} hours**."
        )
        costs[device] = {
            "median_step_s": run["median_step_s"],
            "validation_s": run["validation_s"],
            "projected_total_hours": run["projected_total_hours"],
            "commit": record["commit"],
        }
    return "\n".join(lines), costs


def temperature_table(
    widths, selection: dict, test_selection: dict, gp_selection: dict, gp_test_selection: dict
) -> str:
    """Per width, and for the GP limit: the temperature chosen on the validation episodes with the test and
    validation accuracy there, and the temperature chosen on the test episodes (the authors' rule) with the
    test accuracy there (sec-oneshot-theory).

    Args:
        widths: ``[n_w]``; selection, test_selection: :func:`attnpaths.oneshot.temperature_grid.selected` of the
            grid on the validation and the test episodes; gp_selection, gp_test_selection: the same of the GP
            limit.
    """
    rows = [
        [
            w,
            f"{selection['temperature'][k]:g}",
            _percent(selection["accuracy"]["test"][k]),
            _percent(selection["accuracy"]["validation"][k]),
            f"{test_selection['temperature'][k]:g}",
            _percent(test_selection["accuracy"]["test"][k]),
        ]
        for k, w in enumerate(widths)
    ]
    rows.append(
        [
            "GP",
            f"{gp_selection['temperature'][0]:g}",
            _percent(gp_selection["accuracy"]["test"][0]),
            _percent(gp_selection["accuracy"]["validation"][0]),
            f"{gp_test_selection['temperature'][0]:g}",
            _percent(gp_test_selection["accuracy"]["test"][0]),
        ]
    )
    return markdown_table(["N", "T (validation)", "A test", "A validation", "T (test, authors' rule)", "A test"], rows)


def sampler_table(samples: dict, temperatures) -> str:
    """The posterior sampler's diagnostics per sampled width: chains, draws and warm-up, ESS and split R-hat of
    the predictor over the test episodes, the smallest ESS of an entry of ``U`` and the wall time.

    Args:
        samples: ``{width: SampledPoint}``; temperatures: the temperature of each, in the same order.
    """
    rows = []
    for (w, point), T in zip(samples.items(), temperatures):
        d = point.diagnostics
        rows.append(
            [
                w,
                f"{T:g}",
                f"{d['num_chains']} x {d['num_samples']} ({d['num_warmup']})",
                f"{d['min_predictor_ess']:.0f} / {d['median_predictor_ess']:.0f}",
                f"{d['max_predictor_rhat']:.3f}",
                f"{d['min_U_ess']:.0f}",
                f"{d['wall_time_s']:.1f}",
            ]
        )
    return markdown_table(
        [
            "N",
            "T",
            "chains x draws (warm-up)",
            "min / median ESS of f",
            "max R-hat of f",
            "min ESS of U",
            "wall time (s)",
        ],
        rows,
    )


def stage_table(seconds: dict) -> str:
    """Wall time per stage (``{stage: seconds}``, underscores shown as spaces)."""
    return markdown_table(["stage", "wall time (s)"], [[k.replace("_", " "), f"{v:.1f}"] for k, v in seconds.items()])


def little_loss_table(result) -> str:
    """Per number of heads pruned ``k`` (sec-oneshot-little-loss): the heads pruned along the score order, the
    accuracy without and after fine-tuning with their changes from the unpruned model, and the score order's
    difference from the exact random-order expectation and from the best set of ``k`` heads (points, +- one
    standard error, paired over the episodes; after fine-tuning over the episodes and the seeds).

    Args:
        result: :class:`attnpaths.oneshot.pruning.LittleLoss`.
    """

    def pm(value, se):
        return f"{100 * value:+.1f} ± {100 * se:.1f}"

    rows = []
    for i, k in enumerate(result.ks):
        rows.append(
            [
                k,
                ", ".join(result.score_sets[i]),
                _percent(result.pruned_accuracy[i]),
                pm(result.pruned_difference[i], result.pruned_se[i]),
                _percent(result.tuned_accuracy[i].mean()),
                pm(result.tuned_difference[i], result.tuned_se[i]),
                f"{_percent(result.random_accuracy[i])} ({pm(result.minus_random[i], result.minus_random_se[i])})",
                f"{_percent(result.best_accuracy[i])}: {', '.join(result.best_sets[i])} "
                f"({pm(result.minus_best[i], result.minus_best_se[i])})",
            ]
        )
    return markdown_table(
        [
            "k",
            "heads pruned (score order)",
            "A, no fine-tuning",
            "change",
            f"A, fine-tuned (mean of {result.num_seeds} seeds)",
            "change",
            "random orders, exact (score order minus it)",
            "best set of k heads (score order minus it)",
        ],
        rows,
    )


def saddle_deviation_table(deviation: dict) -> str:
    """The samples' distance from the saddle point at one temperature (sec-oneshot-saddle): ``r(N)``, its standard
    error and ``N r(N)``, which is constant where the distance falls like ``1 / N``."""
    rows = [
        [str(int(N)), f"{r:.4f}", f"{se:.4f}", f"{N * r:.3f}"]
        for N, r, se in zip(deviation["N"], deviation["r"], deviation["se"])
    ]
    return markdown_table(["$N$", "$r(N)$", "standard error", "$N\\,r(N)$"], rows)


def wrong_weight_sentence(verdicts) -> str:
    """What claim 2w says against actions with a wrong entropy weight (claims ``"2w (entropy x c)"``), and whether
    every such mistake is caught (contradicted)."""
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("verdicts must hold at least one wrong entropy weight")
    parts = [
        f"against the action with its entropy weighted by {v.claim.rsplit('x ', 1)[1].rstrip(')')}, claim 2w is "
        f"{v.outcome.value} ({escape_markdown(v.measured.rstrip('.'))})"
        for v in verdicts
    ]
    caught = all(v.outcome is Outcome.CONTRADICTED for v in verdicts)
    ending = (
        "every such mistake is caught."
        if caught
        else "not every such mistake is caught: at these run lengths the claim cannot see an error of that size."
    )
    return "The same test " + "; ".join(parts) + ": " + ending


# ---------------------------------------------------------------------------------------------------- replicates


def replicate_table(models) -> str:
    """Per trained model of the replicates (sec-oneshot-replicates), the mean over its draws of the training episodes
    of what the claims test: the temperatures chosen on the validation episodes (the distinct ones), the test
    accuracy of the theory at the small width, of its diagonal and of the GP limit, the label fractions of the
    leading PCs, the pattern correlation with the model's weights and the pruning gain over random orders.

    Args:
        models: :class:`attnpaths.oneshot.replicates.ModelReplicates`, one per model.
    """

    def temperatures(values):
        return ", ".join(f"{T:g}" for T in sorted(set(np.round(values, 12))))

    rows = [
        [
            m.seed,
            m.num_draws,
            temperatures(m.temperature),
            temperatures(m.gp_temperature),
            _percent(m.accuracy["theory"].mean()),
            _percent(m.accuracy["diagonal"].mean()),
            _percent(m.accuracy["gp"].mean()),
            f"{m.label_fraction['finite_width'].mean():.3f} / {m.label_fraction['gp'].mean():.3f}",
            f"{m.transfer['theory'].mean():+.3f}",
            f"{100 * m.order_gain['theory'].mean():+.1f}",
        ]
        for m in models
    ]
    return markdown_table(
        [
            "training seed",
            "draws",
            "T (theory)",
            "T (GP)",
            "A theory",
            "A diag U",
            "A GP",
            "label fraction, finite width / GP",
            "pattern correlation",
            "pruning gain over random (points)",
        ],
        rows,
    )


def order_parameter_table(models, verdicts: dict) -> str:
    """Claims 8 and 7b over the replicates with the theory's ``U`` and with every other order parameter of the draws
    (near the GP limit, and each plausible mistake): the mean pattern correlation with the models' weights, its
    excess over the relabelled heads, the pruning gain over random orders, each with its outcome.

    Args:
        models: :class:`attnpaths.oneshot.replicates.ModelReplicates`; verdicts: ``{order parameter: (claim 8's
            verdict, claim 7b's verdict)}`` in the rows' order.
    """
    rows = []
    for name, (transfer, order) in verdicts.items():
        correlation = float(np.mean([m.transfer[name].mean() for m in models]))
        rows.append(
            [
                escape_markdown(order_parameter_name(name)),
                f"{correlation:+.3f}",
                f"{transfer.value:+.3f} ({transfer.outcome.value})",
                f"{100 * order.value:+.1f} ({order.outcome.value})",
            ]
        )
    return markdown_table(
        [
            "order parameter",
            "pattern correlation",
            "its excess over relabelled heads (claim 8)",
            "pruning gain over random, points (claim 7b)",
        ],
        rows,
    )


def order_width_table(widths, temperatures, verdicts) -> str:
    """Claim 7b's statistic on the chapter's model with the head scores of ``U`` at every solved width (each at its
    temperature chosen on the validation episodes): the accuracy of the score order averaged over the pruned heads
    and its exact p-value against every random order (:func:`attnpaths.oneshot.claims.pruning_order`)."""
    rows = [
        [int(w), f"{T:g}", _percent(v.value), f"{v.p_value:.3g}", v.outcome.value]
        for w, T, v in zip(widths, temperatures, verdicts)
    ]
    return markdown_table(
        ["N", "T", "A, score order (mean over the pruned heads)", "p (exact, random orders)", "outcome"], rows
    )


def best_set_sentence(models, margin: float) -> str:
    """Whether any ranking could keep the loss within ``margin`` of the unpruned model at the ``k`` of claim 7c: the
    loss of the best set of ``k`` heads on each model's pruning episodes (picked there, so the smallest loss any
    ranking could reach), averaged over the models."""
    losses = np.array([[m.base_accuracy - b for b in m.best_accuracy] for m in models])  # [S, m]
    ks = models[0].ks
    parts = [
        f"k = {k}: {100 * losses[:, i].mean():.1f} points (from {100 * losses[:, i].min():.1f} to "
        f"{100 * losses[:, i].max():.1f})"
        for i, k in enumerate(ks)
    ]
    beyond = [k for i, k in enumerate(ks) if losses[:, i].mean() > margin]
    text = "Even the best set of heads of each size costs, on average over the models, " + "; ".join(parts) + ". "
    if beyond:
        return text + (
            f"At k = {', '.join(map(str, beyond))} that is more than the margin of {100 * margin:g} points: no "
            "ranking, the theory's or any other, could keep the loss within the margin against the unpruned model "
            "there, which is why claim 7c measures the score order against the best set of the same size."
        )
    return text + f"Every best set stays within the margin of {100 * margin:g} points."
