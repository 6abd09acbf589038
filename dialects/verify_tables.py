"""Tables verifiers build once per verification run (a symbol table per module instead of a scan
per op).  They live with the dialects, whose verifiers use them, so that no dialect imports the
front end's verification driver (pto_compiler/verify.py, which opens the run)."""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

_TABLES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("ptoc_verify_tables", default=None)


@contextmanager
def unchanged_ir():
    """Verifiers run in this ``with`` body may share tables they build from the IR (:func:`run_table`):
    the body verifies, it does not change the IR."""
    reset = _TABLES.set({})
    try:
        yield
    finally:
        _TABLES.reset(reset)


def run_table(key, build):
    """Inside :func:`unchanged_ir`, the table ``build()`` made for ``key``, built once; else None."""
    tables = _TABLES.get()
    if tables is None:
        return None
    if key not in tables:
        tables[key] = build()
    return tables[key]
