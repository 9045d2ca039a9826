#!/usr/bin/env bash
# One-stop set-up and entry points (see README.md).
#   bash dev.sh demo    # set up, then train on bundled real data and print a table
#   bash dev.sh test    # set up, then check the import layering and run the test suite
#   bash dev.sh bench-smoke   # set up, then a tiny run of every benchmark script
#   bash dev.sh docs    # set up with the docs extra, then build the site (warnings are errors)
# Set-up (idempotent): a virtualenv in $VENV (default .venv), the CPU build of
# torch==2.13.0 first (an unpinned torch pulls GPU packages), then this
# package built from source (needs a C compiler) with its test extras (and
# the docs extras for `docs`).
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

setup() {
    local extras=${1:-test}
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    local py="$VENV/bin/python"
    "$py" -m pip install -q --upgrade pip
    "$py" -m pip install -q "torch==2.13.0"
    "$py" -m pip install -q -e ".[$extras]"
}

cmd=${1:-}
case "$cmd" in
    demo)
        setup
        "$VENV/bin/python" -m sklearn_difftrees.demo
        ;;
    test)
        setup
        "$VENV/bin/lint-imports"    # the layering contracts of pyproject.toml
        "$VENV/bin/python" -m pytest -q
        ;;
    bench-smoke)
        setup
        for script in benchmarks/bench_*.py; do
            echo "== $script --smoke"
            "$VENV/bin/python" "$script" --smoke
        done
        ;;
    docs)
        # HTML in docs/_build/html; the gallery runs examples/plot_*.py (cached
        # by content between builds in docs/auto_examples).
        setup "test,docs"
        start=$SECONDS
        OMP_NUM_THREADS=1 "$VENV/bin/python" -m sphinx -E -W --keep-going -q -b html docs docs/_build/html
        echo "docs: built in $((SECONDS - start)) s: docs/_build/html/index.html"
        ;;
    *)
        echo "usage: bash dev.sh {demo|test|bench-smoke|docs}" >&2
        exit 2
        ;;
esac
