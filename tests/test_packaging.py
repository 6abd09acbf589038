"""Packaging (issue 14): the wheel `pip install .` installs holds every module of the four packages, the
Lark grammar, and the two console scripts."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"pto_compiler": "pto_compiler", "pto_compiler/dialects": "dialects",
                "pto_compiler/passes": "passes", "pto_compiler/runtime": "runtime"}


def test_wheel_contents(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("ptoc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {f"{pkg}/{p.name}" for pkg, src in PACKAGE_DIRS.items() for p in (REPO / src).glob("*.py")}
    assert want <= names, sorted(want - names)
    assert "pto_compiler/grammar.lark" in names
    assert not any(n.startswith(("tests/", "bench/", "examples/", "lit_tests/")) for n in names)
    entry_points = configparser.ConfigParser()
    entry_points.read_string(zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt")))
                             .decode())
    assert dict(entry_points["console_scripts"]) == {"ptoc": "pto_compiler.cli:main",
                                                     "ptoc-opt": "pto_compiler.opt:main"}


def test_dialects_import_no_front_end_and_no_runtime():
    """Layering (issue 10): a module under dialects/ imports xDSL, the standard library and other
    dialects modules only, never the front end, the passes or the runtime."""
    import ast

    for path in sorted((REPO / "dialects").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                if name.startswith("pto_compiler"):
                    assert name.startswith("pto_compiler.dialects"), f"{path.name} imports {name}"
