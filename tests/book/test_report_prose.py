"""What the reproducibility chapter quotes from each committed benchmark record (attnpaths_book.report's prose
builders): the numbers by their glue names, the Markdown texts apart, and both glued by one call."""

import copy

from attnpaths_book import report


class GlueLog:
    """Stands in for a ChapterRecorder: keeps what is glued, numbers and Markdown apart."""

    def __init__(self):
        self.numbers, self.texts = {}, {}

    def glue_all(self, values, *, record=True):
        self.numbers.update(values)
        return values

    def markdown(self, name, text):
        self.texts[name] = text
        return text


def test_solver_prose_words_follow_the_goals():
    record = report.committed_record("solver", required=True)
    hmc = record["report"]["problems"]["hmc"]
    prose = report.solver_prose(record)
    assert prose.numbers["solver_hmc_ms"] == hmc["solver"]["ms"]
    assert prose.numbers["solver_date"] == record["finished_utc"][:10]
    assert prose.numbers["solver_load_start"] == record["machine"]["load_average_1min_start"]
    assert set(prose.markdown) == {
        "solver_table",
        "solver_command",
        "solver_examples_crossover",
        "solver_paths_crossover",
    }
    assert prose.markdown["solver_command"] == report.inline_code(record["command"])
    slow = copy.deepcopy(record)
    slow["report"]["problems"]["hmc"]["solver"]["ms"] = 2 * record["report"]["targets"]["hmc_ms"]
    assert report.solver_prose(slow).numbers["solver_verdict_hmc_ms"] == "misses"
    slow["report"]["problems"]["hmc"]["solver"]["ms"] = record["report"]["targets"]["hmc_ms"]
    assert report.solver_prose(slow).numbers["solver_verdict_hmc_ms"] == "meets"


def test_sampler_prose_reads_its_goal_and_the_agreement_of_the_predictors():
    record = report.committed_record("sampler", required=True)
    ratio = record["report"]["ess_per_s_ratio"]
    z = record["report"]["max_mean_predictor_z"]
    prose = report.sampler_prose(record, goal=ratio, z_limit=z)
    assert prose.numbers["bench_verdict"] == "meets" and prose.numbers["bench_goal"] == ratio
    assert prose.markdown["bench_agreement"] == "they agree"
    assert "bench_load_start" not in prose.numbers  # the record has no load at its start
    worse = report.sampler_prose(record, goal=2 * ratio, z_limit=z / 2)
    assert worse.numbers["bench_verdict"] == "misses" and worse.markdown["bench_agreement"].startswith("**they differ")


def test_numpyro_and_sampler_growth_prose_and_their_glue():
    numpyro = report.numpyro_prose(report.committed_record("numpyro_nuts", required=True))
    assert numpyro.numbers["numpyro_converged"] in {"reached", "did not reach"}
    assert set(numpyro.markdown) == {"numpyro_table", "numpyro_command"}
    growth = report.sampler_growth_prose(report.committed_record("sampler_growth", required=True), rhat_limit=1.05)
    assert growth.numbers["sgrowth_rhat_limit"] == 1.05
    assert {f"sgrowth_{s}_{t}" for s in ("width", "examples") for t in ("crossover", "mixing")} < set(growth.markdown)
    log = GlueLog()
    growth.glue(log)
    assert log.numbers == growth.numbers and log.texts == growth.markdown


def test_shipped_weights_table_and_summary():
    from types import SimpleNamespace

    entry = SimpleNamespace(
        sha256="ab" * 32,
        kind="pruning",
        label="two models",
        chapter="pruning",
        profile="smoke",
        command="python -m attnpaths_book run pruning",
        provenance={"machine": {"cpu_model": "Xeon", "cpu_capability": "AVX2"}, "trained_utc": "2026-12-01T10:00:00"},
    )
    lines = report.shipped_table({"p.pt": entry}).splitlines()
    assert (
        len(lines) == 3
        and lines[2] == f"| `p.pt` | pruning | smoke | two models | `{'ab' * 8}...` | Xeon (AVX2), 2026-12-01 |"
    )
    assert report.shipped_table({}) == "*No weights are shipped yet.*"
    kept = report.shipped_weights({"p.pt": entry})["p.pt"]
    assert kept["machine"] == {"cpu_model": "Xeon", "cpu_capability": "AVX2"} and kept["sha256"] == "ab" * 32
    assert "trained_utc" not in kept


def test_tolerance_table_has_one_row_per_rule():
    from attnpaths_book import tolerances

    lines = report.tolerance_table(tolerances.TABLE).splitlines()
    assert len(lines) == 2 + len(tolerances.TABLE)
    rule = tolerances.TABLE[0]
    assert lines[2].startswith(f"| `{rule.pattern}` | {rule.cls} | {rule.rtol:g} | {rule.atol:g} |")
