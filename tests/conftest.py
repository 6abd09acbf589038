"""Settings for the whole test session."""

from __future__ import annotations


def pytest_collection_finish(session) -> None:
    """The suite compiles thousands of kernels in one process.  At its default thresholds Python's
    cyclic collector re-walks every module, test item and IR object alive, again and again: what
    collection built is frozen and the collector runs every 250,000 new objects, as in a ptoc
    process (cli.few_collections; ptoc called in-process leaves the collector alone, cli.command)."""
    from pto_compiler.cli import few_collections

    few_collections()
