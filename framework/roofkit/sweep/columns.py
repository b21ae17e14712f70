"""Column kinds of a sweep table: plain numpy arrays and categorical strings.

A million-point sweep has a handful of distinct device, precision or reason strings; storing
them as integer codes into a small tuple of categories keeps a column at 4 bytes a row and
makes ``device == "h100-sxm"`` one integer comparison per row.
"""

from __future__ import annotations

import numpy as np


class Categorical:
    """Strings stored as ``codes`` (int32 indices) into ``categories`` (a tuple of str).

    ``categories[codes[i]]`` is row ``i``'s value; :meth:`values` materializes the numpy
    array of strings only when asked.
    """

    __slots__ = ("categories", "codes")

    def __init__(self, codes, categories):
        self.codes = np.asarray(codes, dtype=np.int32)
        self.categories = tuple(categories)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index):
        if isinstance(index, int | np.integer):
            return self.categories[self.codes[index]]
        return Categorical(self.codes[index], self.categories)

    def code_of(self, value: str) -> int:
        """The code of ``value``; -1 when it does not occur."""
        try:
            return self.categories.index(value)
        except ValueError:
            return -1

    def values(self) -> np.ndarray:
        """A numpy array of the strings (dtype object, one reference per row)."""
        cats = np.empty(len(self.categories), dtype=object)
        cats[:] = self.categories
        return cats[self.codes] if len(cats) else np.empty(len(self.codes), dtype=object)

    def tolist(self) -> list[str]:
        cats = self.categories
        return [cats[c] for c in self.codes.tolist()]

    def __repr__(self) -> str:
        return f"Categorical({len(self)} rows, categories={list(self.categories)!r})"


def intern(parts: list[Categorical]) -> Categorical:
    """Concatenate categorical columns, merging their categories in first-seen order."""
    merged: dict[str, int] = {}
    codes = []
    for part in parts:
        remap = np.empty(max(len(part.categories), 1), dtype=np.int32)
        for i, cat in enumerate(part.categories):
            remap[i] = merged.setdefault(cat, len(merged))
        codes.append(remap[part.codes] if len(part.categories) else part.codes)
    return Categorical(np.concatenate(codes) if codes else np.empty(0, np.int32), merged)


def concat(parts: list):
    """Concatenate the same column from several tables."""
    if isinstance(parts[0], Categorical):
        return intern(parts)
    return np.concatenate(parts)


def to_python(column) -> list:
    """The column as a list of Python scalars (str, int, float, bool)."""
    if isinstance(column, Categorical):
        return column.tolist()
    return column.tolist()


def as_array(column) -> np.ndarray:
    """A numpy array view of either kind of column."""
    if isinstance(column, Categorical):
        return column.values()
    return column
