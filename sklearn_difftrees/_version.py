"""The package version, in one place (read by ``pyproject.toml`` and stamped
into every pickled estimator by :mod:`sklearn_difftrees._core.persistence`)."""

__version__ = "0.1.0.dev0"
