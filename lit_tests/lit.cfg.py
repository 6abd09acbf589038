# lit configuration for ptoc (reference/xdsl_guide.md §5).
#
# Run from the repository root with the venv's tools:  lit -qv lit_tests
# One .pto/.mlir file per pass or op family; RUN lines use ptoc, ptoc-opt and filecheck
# (Python filecheck 1.0.6: no --implicit-check-not, no [[#a+1]] expressions).
import os
import sys

import lit.formats

config.name = "ptoc"
config.test_format = lit.formats.ShTest(execute_external=False)  # lit's internal shell; `not` works
config.suffixes = [".pto", ".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.test_source_root
config.excludes = ["Inputs", "lit.cfg.py"]

# lit scrubs the environment of RUN lines. Put the interpreter's bin directory (the venv
# that runs lit, where pip put ptoc, ptoc-opt and filecheck) first on PATH, so the tests
# work without activating the venv (`.venv/bin/lit lit_tests`).
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(sys.executable), config.environment.get("PATH", "")])
# Repository root, for RUN lines that use files outside lit_tests (examples/).
config.substitutions.append(("%repo", os.path.dirname(config.test_source_root)))
