"""The columns of pandas and polars DataFrames, read one way.

scikit-learn's ``validate_data`` converts both kinds of frame to arrays and
takes ``feature_names_in_`` from their string column names; what it cannot
convert is text. :mod:`.categorical` codes the category columns of text
itself and refuses other text with a message naming the column: this module
gives it, for either library, each column's kind (:func:`column_kinds`), a
column's values and categories, and a copy of the frame with columns
replaced (:func:`replace_columns`; the user's frame is never modified).
Neither library is imported unless the input is one of its frames (neither
is a dependency). Torch-free.
"""

import sys

import numpy as np

__all__ = [
    "CATEGORY",
    "CODED",
    "NUMBER",
    "TEXT",
    "TIME",
    "column_categories",
    "column_has_missing",
    "column_kinds",
    "column_name",
    "column_values",
    "frame_library",
    "is_missing_value",
    "replace_columns",
]

#: A category column of non-numeric categories (strings, ...): coded by
#: :mod:`.categorical` as the positions of its values among the fit's categories.
CODED = "coded"
#: A category column of numbers (or booleans): its values are the numbers.
CATEGORY = "category"
#: Strings or other objects outside a category column.
TEXT = "text"
#: Dates, times or durations.
TIME = "time"
#: Anything else (numbers, booleans, nullable or pyarrow-backed): left to ``validate_data``.
NUMBER = "number"

_POLARS_KINDS = {
    "Categorical": CODED, "Enum": CODED,
    "String": TEXT, "Utf8": TEXT, "Object": TEXT, "Binary": TEXT,
    "Date": TIME, "Datetime": TIME, "Duration": TIME, "Time": TIME,
}


def is_missing_value(value):
    """Whether one value of an object column or label array is missing: None,
    ``pd.NA`` (or polars' null read as None), or a float NaN."""
    return (value is None or type(value).__name__ == "NAType"
            or (isinstance(value, (float, np.floating)) and value != value))


def frame_library(X):
    """``"pandas"`` or ``"polars"`` for a DataFrame of that library (not a
    Series, nor a polars LazyFrame, which scikit-learn refuses too), else None."""
    for library in ("pandas", "polars"):
        module = sys.modules.get(library)  # imported if X is one of its frames
        if module is not None and isinstance(X, module.DataFrame):
            return library
    return None


def _pandas_kind(dtype):
    name = getattr(dtype, "name", str(dtype))
    if name == "category":
        numeric = np.asarray(dtype.categories).dtype.kind in "biuf"
        return CATEGORY if numeric else CODED
    kind = getattr(dtype, "kind", "O")
    if kind in "mM":
        return TIME
    if kind in "OSUT" or name in ("string", "str"):
        return TEXT
    return NUMBER


def _polars_kind(dtype):
    name = dtype.__name__ if isinstance(dtype, type) else type(dtype).__name__
    return _POLARS_KINDS.get(name, NUMBER)


def column_kinds(X):
    """One kind (:data:`CODED`, :data:`CATEGORY`, :data:`TEXT`,
    :data:`TIME` or :data:`NUMBER`) per column of the DataFrame ``X``, or
    None when ``X`` is not a pandas or polars DataFrame."""
    library = frame_library(X)
    if library == "pandas":
        return [_pandas_kind(dtype) for dtype in X.dtypes]
    if library == "polars":
        return [_polars_kind(dtype) for dtype in X.schema.values()]
    return None


def column_name(X, j):
    """The name of column ``j`` as a Python value (``1``, not ``np.int64(1)``,
    in a message)."""
    name = X.columns[j]
    return name.item() if isinstance(name, np.generic) else name


def _column(X, j):
    return X.iloc[:, j] if frame_library(X) == "pandas" else X.to_series(j)


def column_values(X, j):
    """The values of column ``j`` as a 1-D object array (strings stay strings)."""
    column = _column(X, j)
    if frame_library(X) == "pandas":
        return np.asarray(column, dtype=object)
    return np.asarray(column.to_list(), dtype=object)


def column_has_missing(X, j):
    """Whether column ``j`` holds a missing value (NaN, None, ``pd.NA``, null)."""
    column = _column(X, j)
    if frame_library(X) == "pandas":
        return bool(column.isna().any())
    return column.null_count() > 0


def column_categories(X, j):
    """The categories of the :data:`CODED` column ``j``, in the order that
    gives their codes: a pandas column's own (unused ones included), a
    polars ``Enum``'s declared ones, and the sorted values of a polars
    ``Categorical`` (whose order of categories is that of their first
    appearance, which another frame of the same values may not share)."""
    if frame_library(X) == "pandas":
        return list(X.dtypes.iloc[j].categories)
    dtype = X.schema[X.columns[j]]
    if type(dtype).__name__ == "Enum":
        return list(dtype.categories.to_list())
    return sorted(set(_column(X, j).drop_nulls().to_list()))


def replace_columns(X, columns):
    """A copy of the frame ``X`` with column ``j`` replaced by ``columns[j]``
    (a float64 array) for every ``j`` of the dict ``columns``; names, order
    and the other columns kept. ``X`` itself is not modified."""
    if frame_library(X) == "pandas":
        X = X.copy(deep=False)
        for j, values in columns.items():
            X.isetitem(j, values)
        return X
    import polars as pl  # X is a polars frame: polars is there

    names = X.columns
    return X.with_columns([pl.Series(names[j], values, dtype=pl.Float64)
                           for j, values in columns.items()])
