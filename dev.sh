#!/usr/bin/env bash
# One-stop set-up and entry points (see README.md).
#   bash dev.sh demo    # set up, then train on bundled real data and print a table
#   bash dev.sh test    # set up, then check the import layering and run the test suite
#   bash dev.sh test-other-fp [PYTEST ARGS]  # the suite (or the tests named) on
#                       # another CPU's floating point: see docs/reliability.md
#   bash dev.sh bench-smoke   # set up, then a tiny run of every benchmark script
#   bash dev.sh docs    # set up with the docs extra, then build the site (warnings are errors)
#   bash dev.sh notebooks     # set up with the notebooks extra, then execute notebooks/*.ipynb
#   bash dev.sh dist-check    # set up, build sdist + wheel, serve them without torch
# Set-up (idempotent): a virtualenv in $VENV (default .venv), torch==2.13.0
# (the training extra), then this package built from source (needs a C
# compiler) in editable mode with its torch and test extras (and the docs
# extras for `docs`).
#
# torch: the plain pin is tried first, so that a machine whose pip finds a
# local CPU wheel (or a mirror) uses it, and CI works with PyPI alone. On
# Linux, PyPI's torch wheel is the CUDA build (several GB); to get the
# CPU-only build instead, point pip at PyTorch's CPU index:
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash dev.sh test
# (the same as: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu;
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu works too).
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_VERSION=2.13.0
TORCH_INDEX_URL=${TORCH_INDEX_URL:-}

install_torch() {
    local py="$1"
    if "$py" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
        return
    fi
    if [ -n "$TORCH_INDEX_URL" ]; then
        "$py" -m pip install -q "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX_URL"
    else
        "$py" -m pip install -q "torch==$TORCH_VERSION"
    fi
    if "$py" -c "import sys, torch; sys.exit(torch.version.cuda is None)" 2>/dev/null; then
        echo "dev.sh: installed the CUDA build of torch. For the CPU-only build (much smaller):" >&2
        echo "  TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash dev.sh ..." >&2
    fi
}

setup() {
    local extras=${1:-test}
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    local py="$VENV/bin/python"
    # Skip the reinstall (which recompiles the kernels) when the build inputs
    # are those of the last install into this venv and the kernels import.
    local stamp="$VENV/.sklearn_difftrees-${extras//,/-}.stamp"
    local want
    want=$(cat pyproject.toml setup.py cython_src/*.pyx cython_src/*.pxd | sha1sum | cut -c1-16)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && "$py" -c "import torch, sklearn_difftrees._kernels._routing" 2>/dev/null; then
        return
    fi
    "$py" -m pip install -q --upgrade pip
    install_torch "$py"
    "$py" -m pip install -q -e ".[torch,$extras]"
    echo "$want" >"$stamp"
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
    test-other-fp)
        # Stand-ins for another processor's rounding (docs/reliability.md,
        # "Another CPU's floating point"): torch's kernels without AVX2 /
        # AVX-512 code, MKL's GEMM on its compatible code path, numpy's
        # OpenBLAS on its Haswell kernels and the compiled training kernels
        # on their baseline (no FMA) variant (tests/conftest.py).
        setup
        shift
        ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE OPENBLAS_CORETYPE=Haswell \
            SKLEARN_DIFFTREES_TEST_FMA=0 "$VENV/bin/python" -m pytest -q "$@"
        ;;
    bench-smoke)
        setup
        for script in benchmarks/bench_*.py; do
            echo "== $script --smoke"
            "$VENV/bin/python" "$script" --smoke
        done
        # The extra tables (benchmarks/extra_sets.py) through bench_defaults' --data-dir.
        extra=$(mktemp -d)
        echo "== benchmarks/extra_sets.py $extra, then bench_defaults.py --smoke on two of them"
        "$VENV/bin/python" benchmarks/extra_sets.py "$extra"
        "$VENV/bin/python" benchmarks/bench_defaults.py --smoke --data-dir "$extra" \
            --datasets checker diabetes --models DGT CPT
        rm -rf "$extra"
        ;;
    docs)
        # HTML in docs/_build/html; the gallery runs examples/plot_*.py (cached
        # by content between builds in docs/auto_examples).
        setup "test,docs"
        start=$SECONDS
        OMP_NUM_THREADS=1 "$VENV/bin/python" -m sphinx -E -W --keep-going -q -b html docs docs/_build/html
        echo "docs: built in $((SECONDS - start)) s: docs/_build/html/index.html"
        ;;
    notebooks)
        # Every cell of every notebook runs (nbmake); outputs are not written back.
        setup "test,notebooks"
        start=$SECONDS
        OMP_NUM_THREADS=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" \
            --nbmake --nbmake-timeout=600 notebooks
        echo "notebooks: ran in $((SECONDS - start)) s"
        ;;
    dist-check)
        # The release artifacts as a user deploys them: `python -m build` makes
        # the sdist and, from it, the wheel (kernels compiled from the .pyx);
        # models pickled (and skops-saved) here load and predict identically in
        # a fresh venv holding the installed wheel and no torch (.ci/dist_check.py).
        setup
        start=$SECONDS
        out=${DIST_DIR:-dist}
        rm -rf "$out"
        mkdir -p "$out"
        "$VENV/bin/python" -m build --outdir "$out" . >"$out/build.log" 2>&1 \
            || { tail -30 "$out/build.log"; exit 1; }
        ls "$out"/*.tar.gz "$out"/*.whl
        OMP_NUM_THREADS=1 "$VENV/bin/python" .ci/dist_check.py train "$out/models"
        "$PYTHON" -m venv "$out/serve-venv"
        wheel=$(ls "$out"/*.whl)
        "$out/serve-venv/bin/python" -m pip install -q "$wheel[skops]"   # no torch
        # Run outside the checkout (no PYTHONPATH): the installed wheel is imported.
        local_root=$PWD
        (cd "$out" && env -u PYTHONPATH OMP_NUM_THREADS=1 serve-venv/bin/python \
            "$local_root/.ci/dist_check.py" serve models)
        echo "dist-check: passed in $((SECONDS - start)) s"
        ;;
    *)
        echo "usage: bash dev.sh {demo|test|test-other-fp|bench-smoke|docs|notebooks|dist-check}" >&2
        exit 2
        ;;
esac
