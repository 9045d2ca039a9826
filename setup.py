"""Build the private Cython kernels; all metadata lives in pyproject.toml."""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# One extension per kernel file: cython_src/<name>.pyx -> sklearn_difftrees._kernels.<name>.
KERNELS = sorted(p.stem for p in Path(__file__).parent.joinpath("cython_src").glob("*.pyx"))
# Development only: SKLEARN_DIFFTREES_KERNELS=_pav,_tel rebuilds just those kernels.
if os.environ.get("SKLEARN_DIFFTREES_KERNELS"):
    KERNELS = [k for k in os.environ["SKLEARN_DIFFTREES_KERNELS"].split(",") if k]

directives = {
    "language_level": 3,
    "boundscheck": bool(os.environ.get("SKLEARN_DIFFTREES_DEBUG")),
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
}

extensions = [
    Extension(
        f"sklearn_difftrees._kernels.{name}",
        [f"cython_src/{name}.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=["-O3"],
    )
    for name in KERNELS
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives))
