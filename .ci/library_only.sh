#!/usr/bin/env bash
# The library as `pip install .` gives it, without extras: a virtual environment of its own (no system packages),
# the package, pytest and pytest-xdist only (pyproject.toml's addopts name its --dist option), at the
# versions requirements.txt pins (as constraints: nothing else is installed).
# Then:
#   1. neither the book's packages nor those of the library's extras (pyproject.toml: engine, diagnostics, plots,
#      tasks) are there;
#   2. the own-model flow runs: the README's own-model examples (in memory, then batch by batch), and a training set
#      streamed in chunks through the Gram statistics on an engine of threads, solved and predicted on a streamed
#      test set;
#   3. the library's tests, `python -m pytest -n 2 tests/library` (they import nothing of the companion; those of parts
#      that need an extra skip, naming it: tests/library/conftest.py);
#   4. the console script `attnpaths` says in one line what to install, with exit status 1.
# It prints the time the install took and the size of the environment.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(mktemp -d)/library-venv"
constraints="$(mktemp)"
# pins only (the checkout itself is installed as a wheel), without extras and comments, as constraints take them
grep -v '^-e' requirements.txt | sed -e 's/#.*//' -e 's/\[[^]]*\]//' > "${constraints}"
python3 -m venv "${venv}"
start=${SECONDS}
"${venv}/bin/python" -m pip install -q -c "${constraints}" . pytest pytest-xdist
echo "pip install . (without extras, with pytest): $((SECONDS - start)) s, the environment $(du -sh "${venv}" | cut -f1)"
# the book's packages are absent (yaml would not tell: Dask uses it too)
if "${venv}/bin/python" -c "import papermill" 2>/dev/null || "${venv}/bin/python" -c "import jupytext" 2>/dev/null; then
  echo "the library's environment holds the book's packages: it is not the library alone" >&2
  exit 1
fi
# so are the extras' packages: the core must not pull any of them in
for module in dask distributed arviz matplotlib sklearn PIL; do
  if "${venv}/bin/python" -c "import ${module}" 2>/dev/null; then
    echo "the library's environment holds ${module}, a package of an extra: pip install . must not install it" >&2
    exit 1
  fi
done
"${venv}/bin/python" - <<'PYTHON'
from pathlib import Path

import torch

from attnpaths import solve_from_statistics
from attnpaths.engine import start_engine
from attnpaths.streaming import gram_statistics, predict_streamed
from attnpaths.hmc import HMCTask, four_path_network
from attnpaths.hmc.streams import HMCChunks

readme = Path("README.md").read_text()
namespace = {}
for marker in ("own-model-example", "own-model-pruning-example", "own-model-scale-example"):  # the second continues the first's session
    example = readme.split(f"<!-- {marker}")[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, f"README.md, {marker}", "exec"), namespace)

task = HMCTask(seq_len=5, feature_width=8)
attention = four_path_network(task).attention
train = HMCChunks(task, attention, seed=0, num_examples=96, chunk_size=32)
test = HMCChunks(task, attention, seed=0, num_examples=64, chunk_size=32, stream=1)
with start_engine(workers=2, threads=True) as engine:
    statistics = gram_statistics(train, train.num_chunks, engine=engine, progress=False)
    solution = solve_from_statistics(statistics, heads=train.heads, width=10, temperature=0.1)
    mean, variance, y = predict_streamed(solution, test, test.num_chunks, engine=engine, progress=False)
accuracy = float((torch.sign(torch.as_tensor(mean)) == torch.as_tensor(y)).double().mean())
assert solution.converged and accuracy > 0.5, (solution.converged, accuracy)
print(f"streamed: {train.num_examples} training examples in {train.num_chunks} chunks, test accuracy {accuracy:.2f}")
PYTHON
# the extras are absent on purpose: their tests skip, naming them (elsewhere CI stops where an extra is missing)
ATTNPATHS_WITHOUT_EXTRAS=1 "${venv}/bin/python" -m pytest -q -p no:cacheprovider -n 2 tests/library
set +e
message="$(cd "$(mktemp -d)" && "${venv}/bin/attnpaths" status 2>&1 >/dev/null)"
status=$?
set -e
lines="$(printf '%s\n' "${message}" | wc -l)"
if [ "${status}" -ne 1 ] || [ "${lines}" -ne 1 ] || ! printf '%s' "${message}" | grep -q "pip install"; then
  echo "without the book extra, attnpaths must print one line saying what to install and exit 1; it printed" \
       "${lines} line(s) with status ${status}:" >&2
  printf '%s\n' "${message}" >&2
  exit 1
fi
echo "attnpaths without the book extra: ${message}"
