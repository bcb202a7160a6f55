#!/usr/bin/env bash
# The library as `pip install .` gives it, without the book extra: a virtual environment of its own (no system
# packages), the package and pytest only, at the versions requirements.txt pins (as constraints: nothing else
# is installed). Then:
#   1. the library's tests, `python -m pytest tests/library` (they import nothing of the companion);
#   2. the console script `attnpaths` says in one line what to install, with exit status 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(mktemp -d)/library-venv"
constraints="$(mktemp)"
# pins only (the checkout itself is installed as a wheel), without extras and comments, as constraints take them
grep -v '^-e' requirements.txt | sed -e 's/#.*//' -e 's/\[[^]]*\]//' > "${constraints}"
python3 -m venv "${venv}"
"${venv}/bin/python" -m pip install -q -c "${constraints}" . pytest
# the book's packages are absent (yaml is not a sign: Dask needs it)
if "${venv}/bin/python" -c "import papermill" 2>/dev/null || "${venv}/bin/python" -c "import jupytext" 2>/dev/null; then
  echo "the library's environment holds the book's packages: it is not the library alone" >&2
  exit 1
fi
"${venv}/bin/python" -m pytest -q -p no:cacheprovider tests/library
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
