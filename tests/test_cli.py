"""The ``ptoc`` and ``ptoc-opt`` drivers: exit codes, target selection, one-line errors.

Most tests call ``cli.main([...])`` in-process with a *fake* front end (``api.parse`` and
``api.verify`` monkeypatched), so they test the driver alone and do not wait for the
Lark front end; a few run the installed console scripts as real subprocesses.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pto_compiler import api, cli
from pto_compiler.diagnostics import Diagnostic, PtocError

REPO = Path(__file__).resolve().parent.parent
SOURCE = "module {\n  func.func @kern() {\n    return\n  }\n}\n"


# ---------------------------------------------------------------------------------------
# a fake front end


def _module(target_arch: str | None = None, funcs: tuple[str, ...] = ("kern",)):
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp, StringAttr

    ops = []
    for name in funcs:
        fn = func.FuncOp(name, ((), ()))
        fn.body.block.add_op(func.ReturnOp())
        ops.append(fn)
    attrs = {} if target_arch is None else {"pto.target_arch": StringAttr(target_arch)}
    return ModuleOp(ops, attributes=attrs)


@dataclasses.dataclass
class FakeFrontEnd:
    target_arch: str | None = None
    funcs: tuple[str, ...] = ("kern",)
    parse_error: BaseException | None = None
    verify_error: BaseException | None = None
    parsed: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    verified_for: list[str] = dataclasses.field(default_factory=list)

    def parse(self, text: str, filename: str = "<stdin>"):
        self.parsed.append((text, filename))
        if self.parse_error is not None:
            raise self.parse_error
        return _module(self.target_arch, self.funcs)

    def verify(self, module, target) -> None:
        self.verified_for.append(target.name)
        if self.verify_error is not None:
            raise self.verify_error


@pytest.fixture
def fe(monkeypatch) -> FakeFrontEnd:
    fake = FakeFrontEnd()
    monkeypatch.setattr(api, "parse", fake.parse)
    monkeypatch.setattr(api, "verify", fake.verify)
    return fake


@pytest.fixture
def kfile(tmp_path) -> Path:
    path = tmp_path / "k.pto"
    path.write_text(SOURCE)
    return path


def _one_error_line(err: str, prog: str = "ptoc") -> str:
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert lines[0].startswith(f"{prog}: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------
# --version, --help, consistency with pyproject.toml and targets.py


def test_version(capsys):
    from importlib.metadata import version

    assert cli.main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert out == f"ptoc 0.1.0 (xdsl {version('xdsl')})\n"
    assert out == "ptoc 0.1.0 (xdsl 0.74.0)\n"
    assert err == ""


def test_version_matches_pyproject():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["version"] == cli.__version__


def test_target_choices_match_targets_module():
    from pto_compiler.targets import ALIASES

    assert set(cli.TARGET_CHOICES) == set(ALIASES)


def test_help(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--target", "--emit", "--entry", "--blocks", "--run", "--reference", "--seed",
                 "--input", "--save-outputs", "--stats", "--trace", "--vf-opt", "--manual",
                 "--debug", "--version", "-o"):
        assert flag in out


# ---------------------------------------------------------------------------------------
# --emit pto: input, output, target selection


def test_emit_pto_stdout(fe, kfile, capsys):
    assert cli.main([str(kfile), "--emit", "pto"]) == 0
    out, err = capsys.readouterr()
    assert "builtin.module" in out and "func.func @kern()" in out
    assert err == ""
    assert fe.parsed == [(SOURCE, str(kfile))]


def test_default_emit_is_the_program(fe, kfile, capsys):
    assert cli.DEFAULT_EMIT == "program"
    assert cli.main([str(kfile)]) == 0
    assert capsys.readouterr().out.startswith(".kernel @kern target=a2a3\n")


def test_output_file(fe, kfile, tmp_path, capsys):
    out_path = tmp_path / "out.mlir"
    assert cli.main([str(kfile), "-o", str(out_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert ".kernel @kern" in out_path.read_text()


def test_stdin(fe, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SOURCE.encode())))
    assert cli.main(["-", "--emit", "pto"]) == 0
    assert fe.parsed == [(SOURCE, "<stdin>")]
    assert "func.func @kern()" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("cli_target", "arch", "expected"),
    [
        (None, None, "a2a3"),           # PTOAS's default
        (None, "a3", "a2a3"),
        (None, "a2a3", "a2a3"),
        (None, "a5", "ascend950"),
        ("ascend950", None, "ascend950"),
        ("a5", None, "ascend950"),
        ("950pr", None, "ascend950"),
        ("950dt", None, "ascend950"),
        ("a2", None, "a2a3"),
        ("a3", "a3", "a2a3"),
        ("ASCEND950", "a5", "ascend950"),  # case-insensitive, agrees: no warning
    ],
)
def test_target_selection(fe, kfile, capsys, cli_target, arch, expected):
    fe.target_arch = arch
    argv = [str(kfile), "--emit", "pto"] + (["--target", cli_target] if cli_target else [])
    assert cli.main(argv) == 0
    assert fe.verified_for == [expected]
    assert capsys.readouterr().err == ""


def test_target_disagreement_warns_and_cli_wins(fe, kfile, capsys):
    fe.target_arch = "a5"
    assert cli.main([str(kfile), "--target", "a2a3", "--emit", "pto"]) == 0
    assert fe.verified_for == ["a2a3"]
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "warning:" in lines[0] and "--target a2a3" in lines[0] and '"a5"' in lines[0]
    assert lines[0].startswith(f"{kfile}: warning: ")
    assert "func.func @kern()" in out


def test_unknown_target_arch_is_an_input_error(fe, kfile, capsys):
    fe.target_arch = "a9"
    assert cli.main([str(kfile)]) == 1
    err = capsys.readouterr().err
    assert f"{kfile}: error: unknown pto.target_arch \"a9\"" in err
    assert fe.verified_for == []


def test_unknown_target_arch_overridden_by_target(fe, kfile, capsys):
    fe.target_arch = "a9"
    assert cli.main([str(kfile), "--target", "a5", "--emit", "pto"]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "warning:" in err
    assert fe.verified_for == ["ascend950"]


def test_entry(fe, kfile, capsys):
    fe.funcs = ("a", "b")
    assert cli.main([str(kfile), "--entry", "b"]) == 0
    capsys.readouterr()
    assert cli.main([str(kfile), "--entry", "c"]) == 2
    assert "--entry: no function named 'c'" in _one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------------------------------
# exit 1: diagnostics in the input


def test_parse_diagnostic_has_caret(fe, kfile, capsys):
    fe.parse_error = PtocError([Diagnostic("expected ')'", str(kfile), 2, 13)])
    assert cli.main([str(kfile)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"{kfile}:2:13: error: expected ')'\n"
                   "  func.func @kern() {\n"
                   "            ^\n")


def test_verify_diagnostic(fe, kfile, capsys):
    fe.verify_error = PtocError([
        Diagnostic("'pto.tadd' op dtype mismatch", str(kfile), 3, 5),
        Diagnostic("'pto.tadd' op second problem", str(kfile), 4, 3),
    ])
    assert cli.main([str(kfile), "--target", "a5"]) == 1
    err = capsys.readouterr().err
    assert f"{kfile}:3:5: error: 'pto.tadd' op dtype mismatch\n    return\n    ^\n" in err
    assert f"{kfile}:4:3: error: 'pto.tadd' op second problem" in err
    assert "Traceback" not in err


def test_stdin_diagnostic_quotes_stdin(fe, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SOURCE.encode())))
    fe.parse_error = PtocError([Diagnostic("bad", "<stdin>", 3, 5)])
    assert cli.main(["-"]) == 1
    assert capsys.readouterr().err == "<stdin>:3:5: error: bad\n    return\n    ^\n"


def test_non_utf8_input(fe, tmp_path, capsys):
    path = tmp_path / "bin.pto"
    path.write_bytes(b"module {\xff}\n")
    assert cli.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1:9: error: input is not UTF-8 text (byte 0xff at offset 8)" in err
    assert fe.parsed == []


def test_ptoc_error_exit_code_is_respected(fe, kfile, capsys):
    fe.parse_error = PtocError([Diagnostic("x", str(kfile), 1, 1)], exit_code=3)
    assert cli.main([str(kfile)]) == 3


# ---------------------------------------------------------------------------------------
# exit 2: usage and I/O errors, one line each


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{k}", "--target", "nosuch"], "argument --target: unknown target 'nosuch'"),
        (["{k}.missing"], "cannot read '{k}.missing': No such file or directory"),
        (["{k}", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        ([], "the following arguments are required: FILE"),
        (["{k}", "--emit", "asm"], "argument --emit: invalid choice: 'asm'"),
        (["{k}", "--blocks", "0"], "argument --blocks: expected a positive integer, got '0'"),
        (["{k}", "--input", "x.npy"], "argument --input: expected NAME=FILE.npy, got 'x.npy'"),
        (["{k}", "--vf-opt", "max"], "argument --vf-opt: invalid choice: 'max'"),
        (["{k}", "--emit", "vf"], "the vf level exists only on ascend950 (--emit vf needs --target ascend950"),
        (["{k}", "--save-outputs", "d"], "--save-outputs needs --run, --reference, --stats or --trace"),
        (["{k}", "--input", "a=a.npy"], "--input needs --run, --reference, --stats or --trace"),
        (["{k}", "--seed", "3"], "--seed needs --run, --reference, --stats or --trace"),
        (["{k}", "--blocks", "2"], "--blocks needs --run, --reference, --stats or --trace"),
        (["{k}", "--reference", "--run"], "--reference runs only the golden model"),
    ],
)
def test_usage_errors_are_one_line(fe, kfile, capsys, argv, message):
    argv = [a.format(k=kfile) for a in argv]
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert _one_error_line(err).startswith(f"ptoc: error: {message.format(k=kfile)}")


def test_directory_input(fe, tmp_path, capsys):
    assert cli.main([str(tmp_path)]) == 2
    assert "is a directory" in _one_error_line(capsys.readouterr().err)


def test_unwritable_output(fe, kfile, tmp_path, capsys):
    assert cli.main([str(kfile), "-o", str(tmp_path / "no" / "such" / "out.mlir")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "cannot write" in line and "No such file or directory" in line


# ---------------------------------------------------------------------------------------
# exit 70: internal errors


def test_internal_error_without_debug(fe, kfile, capsys):
    fe.parse_error = RuntimeError("boom\nsecond line")
    assert cli.main([str(kfile)]) == 70
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == "ptoc: internal error: RuntimeError: boom"
    assert "please report this bug" in err
    assert "Traceback" not in err


def test_internal_error_with_debug(fe, kfile, capsys):
    fe.verify_error = KeyError("k")
    assert cli.main([str(kfile), "--debug"]) == 70
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "ptoc: internal error: KeyError: 'k'"
    assert "Traceback (most recent call last)" in err
    assert "please report this bug" in err


def test_internal_base_exception(fe, kfile, capsys):
    class Odd(BaseException):
        pass

    fe.parse_error = Odd("strange")
    assert cli.main([str(kfile)]) == 70
    assert "ptoc: internal error: Odd: strange" in capsys.readouterr().err


def test_missing_front_end_is_an_internal_error(kfile, monkeypatch, capsys):
    def parse(text, filename="<stdin>"):
        raise ModuleNotFoundError("No module named 'pto_compiler.frontend'")

    monkeypatch.setattr(api, "parse", parse)
    assert cli.main([str(kfile)]) == 70
    assert "internal error: ModuleNotFoundError" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# ptoc-opt in-process


@pytest.fixture
def mlir_file(tmp_path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text("func.func @f(%a: i32) -> i32 {\n"
                    "  %b = arith.addi %a, %a : i32\n"
                    "  func.return %b : i32\n"
                    "}\n")
    return path


def test_opt_roundtrip(mlir_file, capsys):
    from pto_compiler import opt

    assert opt.main([str(mlir_file), "-p", "cse"]) == 0
    out = capsys.readouterr().out
    assert "%b = arith.addi %a, %a : i32" in out


def test_opt_version(capsys):
    from pto_compiler import opt

    assert opt.main(["--version"]) == 0
    assert capsys.readouterr().out == "ptoc-opt 0.1.0 (xdsl 0.74.0)\n"


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["-p", "no-such-pass"], 1, "ptoc-opt: error: unknown pass 'no-such-pass'\n"),
        (["-p", "pto-bufferise"], 1, "ptoc-opt: error: unknown pass 'pto-bufferise'; did you mean 'pto-bufferize'?"),
        (["-p", "cse{"], 1, "ptoc-opt: error: Error parsing pass pipeline specification:"),
        (["-p", "cse{nosuch=1}"], 1, "ptoc-opt: error: Provided arguments"),
        (["--target", "nosuch"], 2, "ptoc-opt: error: argument --target: unknown target 'nosuch'"),
        (["--no-such-flag"], 2, "ptoc-opt: error: unrecognized arguments: --no-such-flag"),
        (["-t", "nosuch"], 2, "ptoc-opt: error: argument -t/--target: invalid choice: 'nosuch'"),
    ],
)
def test_opt_errors(mlir_file, capsys, extra, code, message):
    from pto_compiler import opt

    assert opt.main([str(mlir_file), *extra]) == code
    out, err = capsys.readouterr()
    assert err.startswith(message), err
    assert "Traceback" not in err


def test_opt_missing_file(tmp_path, capsys):
    from pto_compiler import opt

    assert opt.main([str(tmp_path / "nope.mlir")]) == 2
    line = _one_error_line(capsys.readouterr().err, "ptoc-opt")
    assert "nope.mlir': No such file or directory" in line


def test_opt_parse_error_is_located(tmp_path, capsys):
    from pto_compiler import opt

    path = tmp_path / "bad.mlir"
    path.write_text("builtin.module {\n  %x = arith.constant 1 : i32\n  %y = arith.addi %x %x : i32\n}\n")
    assert opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{path}:3:22: error: Expected ','\n  %y = arith.addi %x %x : i32\n" + " " * 21 + "^\n", err


def test_opt_verify_error(tmp_path, capsys):
    from pto_compiler import opt

    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f() -> i32 {\n  func.return\n}\n")
    assert opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: 'func.return' op Expected arguments to have the same types")
    assert err.endswith("\n  func.return\n  ^\n") and "builtin.module" not in err


def test_opt_pto_frontend_uses_ptoc_parser(tmp_path, monkeypatch, capsys):
    from pto_compiler import opt

    path = tmp_path / "k.pto"
    path.write_text(SOURCE)
    seen = []

    def parse(text, filename="<stdin>"):
        seen.append(filename)
        raise PtocError([Diagnostic("bad op", filename, 3, 5)])

    monkeypatch.setattr(api, "parse", parse)
    assert opt.main([str(path)]) == 1
    assert seen == [str(path)]
    assert capsys.readouterr().err == f"{path}:3:5: error: bad op\n    return\n    ^\n"

    monkeypatch.setattr(api, "parse", lambda text, filename="<stdin>": _module())
    assert opt.main([str(path)]) == 0
    assert "func.func @kern()" in capsys.readouterr().out


def test_opt_internal_error(mlir_file, monkeypatch, capsys):
    from pto_compiler import opt

    def boom(self, prog):
        raise RuntimeError("kaput")

    monkeypatch.setattr(opt.PtocOptMain, "apply_passes", boom)
    assert opt.main([str(mlir_file)]) == 70
    err = capsys.readouterr().err
    assert err.startswith("ptoc-opt: internal error: RuntimeError: kaput\n")
    assert "Traceback" not in err
    assert opt.main([str(mlir_file), "--debug"]) == 70
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_opt_target_reaches_passes(mlir_file, monkeypatch, capsys):
    from xdsl.passes import ModulePass

    from pto_compiler import opt

    seen: list[tuple[str, str]] = []

    @dataclasses.dataclass(frozen=True)
    class WithTarget(ModulePass):
        name = "fake-with-target"
        target: str = "a2a3"
        mode: int = 1

        def apply(self, ctx, op) -> None:
            seen.append((self.name, self.target))

    @dataclasses.dataclass(frozen=True)
    class WithoutTarget(ModulePass):
        name = "fake-without-target"

        def apply(self, ctx, op) -> None:
            seen.append((self.name, "-"))

    monkeypatch.setattr(opt, "ptoc_passes", lambda: {
        "fake-with-target": lambda: WithTarget,
        "fake-without-target": lambda: WithoutTarget,
    })
    pipeline = "fake-with-target,fake-without-target,fake-with-target{target=a2a3 mode=2}"
    assert opt.main([str(mlir_file), "-p", pipeline, "--target", "a5"]) == 0
    assert seen == [("fake-with-target", "ascend950"), ("fake-without-target", "-"),
                    ("fake-with-target", "a2a3")]
    seen.clear()
    assert opt.main([str(mlir_file), "-p", "fake-with-target"]) == 0
    assert seen == [("fake-with-target", "a2a3")]
    capsys.readouterr()


def test_opt_works_without_get_all_passes(monkeypatch):
    import pto_compiler.passes as passes_pkg
    from pto_compiler import opt

    monkeypatch.delattr(passes_pkg, "get_all_passes", raising=False)
    assert opt.ptoc_passes() == {}


# ---------------------------------------------------------------------------------------
# the installed console scripts, as real subprocesses


def _script(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))
    assert found, (f"console script '{name}' is not installed: run "
                   "`pip install -e '.[test]'` in the venv that runs pytest")
    return found


def _run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=120,
                          cwd=REPO)


def test_script_ptoc_version():
    r = _run(_script("ptoc"), "--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, "ptoc 0.1.0 (xdsl 0.74.0)\n", "")


def test_script_ptoc_usage_errors(tmp_path):
    ptoc = _script("ptoc")
    r = _run(ptoc, str(tmp_path / "missing.pto"))
    assert r.returncode == 2
    assert _one_error_line(r.stderr).endswith("missing.pto': No such file or directory")
    r = _run(ptoc, "examples/vadd.pto", "--target", "nosuch")
    assert r.returncode == 2
    assert "unknown target 'nosuch'" in _one_error_line(r.stderr)
    r = _run(ptoc, "examples/vadd.pto", "--emit", "vf")
    assert r.returncode == 2
    assert _one_error_line(r.stderr).startswith("ptoc: error: the vf level exists only on ascend950")


def test_version_imports_no_heavy_modules():
    code = ("import sys\n"
            "from pto_compiler import cli\n"
            "rc = cli.main(['--version'])\n"
            "heavy = sorted(m for m in ('xdsl', 'numpy', 'lark', 'ml_dtypes') if m in sys.modules)\n"
            "print(rc, heavy)\n")
    r = _run(sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "0 []"


def test_emit_pto_imports_no_numpy():
    """NumPy and ml_dtypes are the run time's: reading and verifying a kernel does without them
    (issue 9's start-up)."""
    code = ("import os, sys\n"
            "from pto_compiler import cli\n"
            "rc = cli.main(['examples/softmax.pto', '--emit', 'pto', '-o', os.devnull])\n"
            "print(rc, sorted(m for m in ('numpy', 'ml_dtypes') if m in sys.modules))\n")
    r = _run(sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "0 []"


@pytest.mark.parametrize("target", ["a2a3", "ascend950"])
def test_compile_imports_no_numpy(target):
    """Nor does compiling a kernel without float scalars to its program: NumPy is loaded when a
    constant must be rounded to its element type (issue 9's 1,000-op compile)."""
    code = ("import os, sys\n"
            "from pto_compiler import cli\n"
            f"rc = cli.main(['examples/matmul.pto', '--target', '{target}', '-o', os.devnull])\n"
            "print(rc, sorted(m for m in ('numpy', 'ml_dtypes') if m in sys.modules))\n")
    r = _run(sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "0 []"


def test_script_ptoc_opt(tmp_path, mlir_file):
    ptoc_opt = _script("ptoc-opt")
    r = _run(ptoc_opt, "--version")
    assert (r.returncode, r.stdout) == (0, "ptoc-opt 0.1.0 (xdsl 0.74.0)\n")
    r = _run(ptoc_opt, str(mlir_file), "-p", "cse", "--target", "ascend950")
    assert r.returncode == 0, r.stderr
    assert "arith.addi %a, %a : i32" in r.stdout
    r = _run(ptoc_opt, "-p", "cse", stdin=mlir_file.read_text())
    assert r.returncode == 0 and "func.func @f" in r.stdout
    r = _run(ptoc_opt, str(mlir_file), "-p", "no-such-pass")
    assert r.returncode == 1
    assert _one_error_line(r.stderr, "ptoc-opt") == "ptoc-opt: error: unknown pass 'no-such-pass'"


# ---------------------------------------------------------------------------------------
# the README's test command is the one CI runs


def test_readme_test_command_matches_ci():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    marker = ci.index("# TEST_CMD (must equal the README's test command)")
    command = ci[marker + 1].strip()
    assert command and not command.startswith("#")
    readme = (REPO / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert command in quick_start.splitlines(), (command, quick_start)
