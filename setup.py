"""Build the private Cython kernels; all metadata lives in pyproject.toml."""

import os
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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

# Kernels whose loops run in parallel with OpenMP (``prange``); the others are
# built without it.
OPENMP_KERNELS = {"_dgt", "_polytope", "_tel"}
if os.name == "nt":  # MSVC
    OPENMP_COMPILE, OPENMP_LINK = ["/openmp"], []
    OPTIMIZE = ["/O2"]
else:  # gcc / clang; -g0: no debug sections (the shipped kernels are 4x smaller)
    OPENMP_COMPILE, OPENMP_LINK = ["-fopenmp"], ["-fopenmp"]
    OPTIMIZE = ["-O3", "-g0"]

extensions = [
    Extension(
        f"sklearn_difftrees._kernels.{name}",
        [f"cython_src/{name}.pyx"],
        depends=[str(p) for p in Path("cython_src").glob("*.pxd")],  # shared inline helpers
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=OPTIMIZE + (OPENMP_COMPILE if name in OPENMP_KERNELS else []),
        extra_link_args=OPENMP_LINK if name in OPENMP_KERNELS else [],
    )
    for name in KERNELS
]



class BuildExt(build_ext):
    """Build without OpenMP when the compiler cannot (e.g. Apple clang without
    libomp, or ``SKLEARN_DIFFTREES_NO_OPENMP=1``): the ``prange`` loops then
    run on one thread, with the same results."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # the kernels compile independently
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        if not self._openmp_works():
            print("sklearn_difftrees: OpenMP unavailable, kernels built single-threaded")
            for ext in self.extensions:
                ext.extra_compile_args = [a for a in ext.extra_compile_args if a not in OPENMP_COMPILE]
                ext.extra_link_args = [a for a in ext.extra_link_args if a not in OPENMP_LINK]
        super().build_extensions()

    def _openmp_works(self):
        if os.environ.get("SKLEARN_DIFFTREES_NO_OPENMP"):
            return False
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
            try:
                objects = self.compiler.compile([src], output_dir=tmp, extra_postargs=OPENMP_COMPILE)
                self.compiler.link_executable(
                    objects, os.path.join(tmp, "probe"), extra_postargs=OPENMP_LINK
                )
            except Exception:  # CompileError / LinkError, whatever the compiler raises
                return False
        return True


setup(
    ext_modules=cythonize(extensions, compiler_directives=directives, include_path=["cython_src"]),
    cmdclass={"build_ext": BuildExt},
)
