"""Build the private Cython kernels; all metadata lives in pyproject.toml."""

import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = ["_routing", "_pav"]

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
