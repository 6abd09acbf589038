"""Modules imported when first used, not when named: the compile path names NumPy and the element
functions (runtime/elementwise.py) at the top of a pass, but only some kernels reach the code that
calls them (a float scalar to round, a pad value), and NumPy costs 0.09 s of start-up."""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module ``name``: the first attribute read imports it (``importlib`` locks
    the import, so threads may race to it)."""

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)
