"""Every failure path the CLI's diagnostics tests cover (tests/test_diagnostics.py,
tests/test_reliability.py, the negative lit files) raises PtocError from the API with the same
location, message, quoted line and exit code as ``ptoc`` prints: both run the same functions."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from test_diagnostics import CASES as VERIFIER_CASES
from test_reliability import MANUAL, kernel

from pto_compiler import api, cli
from pto_compiler.api import PtocError

REPO = Path(__file__).resolve().parent.parent

_F64 = "    pto.tadds ins(%t, %s : !pto.tile_buf<vec, 16x16xf32>, f64) outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n"
_FN = "func.func @f(%a: !pto.tile<8x64xf32>) -> !pto.tile<8x64xf32> {\n  return %a : !pto.tile<8x64xf32>\n}\n"
_MANUAL = MANUAL.replace("    pto.tassign %xt, @tile(0x0)\n", "    %cneg = arith.constant -64 : i64\n")

# (id, source, ptoc flags)
CASES = [(f"verifier-{name}", source, ["--target", target.name, "--emit", "pto"])
         for name, source, target, *_ in VERIFIER_CASES]
CASES += [
    ("kwarg-ssa-list", kernel().replace("outs(%t : !pto.tile_buf<vec, 16x16xf32>)\n",
                                        "outs(%t : !pto.tile_buf<vec, 16x16xf32>) foo = [%c0, %c1]\n", 1), []),
    ("f64-scalar-a2a3", kernel(", %s: f64", _F64), ["--target", "a2a3", "--run"]),
    ("f64-scalar-ascend950", kernel(", %s: f64", _F64), ["--target", "ascend950", "--run"]),
    ("f8-pointer", kernel(", %s: !pto.ptr<f8E4M3FN>"), ["--target", "a2a3", "--run"]),
    ("tcvt-round-mode", "%d = pto.tcvt %a {rmode = #pto<round_mode BOGUS>} : !pto.tile<16x64xf32> -> "
                        "!pto.tile<16x64xf16>\n", ["--emit", "pto"]),
    ("long-literal", kernel(consts="\n    %cx = arith.constant " + "9" * 5000 + " : index"), []),
    ("index-over-64-bits", kernel(consts="\n    %cx = arith.constant 18446744073709551616 : index"), []),
    ("duplicate-function", _FN + _FN, []),
    ("form-feed", "func.func @f() {\n\f  %x = pto.bogus\n  return\n}\n", []),
    ("negative-address", _MANUAL.replace("%xt = pto.alloc_tile :", "%xt = pto.alloc_tile addr = %cneg :"),
     ["--target", "a2a3"]),
    ("no-lowering", (REPO / "lit_tests/lower_a2a3/errors.pto").read_text(), ["--target", "a2a3", "--entry", "rem"]),
    ("no-lowering-run", (REPO / "lit_tests/lower_a2a3/errors.pto").read_text(),
     ["--target", "a2a3", "--entry", "sat", "--run"]),
    ("missing-input", kernel(", %n: index"), ["--run"]),
]
for lit in ("pto/invalid.pto", "pto/invalid_pairreduce.pto", "pto/invalid_target.pto", "vf/invalid.pto",
            "frontend/invalid_scope.pto", "frontend/invalid_isolated.pto"):
    CASES.append((f"lit-{lit}", (REPO / "lit_tests" / lit).read_text(),
                  ["--target", "ascend950" if lit.startswith("vf") or "pairreduce" in lit else "a2a3"]))


def _flag(flags: list[str], name: str) -> str | None:
    return flags[flags.index(name) + 1] if name in flags else None


def _through_api(text: str, filename: str, flags: list[str]) -> None:
    """What ``ptoc FILE FLAGS`` does, in API calls."""
    module = api.parse(text, filename)
    target = api.target_of(module, _flag(flags, "--target"))
    api.verify(module, target)
    entry = _flag(flags, "--entry")
    if "--run" in flags:
        api.check(module, target, entry=entry)
    else:
        api.emit(module, target, _flag(flags, "--emit") or "program", entry=entry)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_api_raises_what_the_cli_prints(tmp_path, case):
    _, text, flags = case
    path = tmp_path / "k.pto"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(path), *flags])
    assert code in (1, 2), err.getvalue()
    with pytest.raises(PtocError) as info:
        _through_api(text, str(path), flags)
    e = info.value
    assert e.exit_code == code
    if code == 2:  # a usage error: `ptoc: error: MESSAGE`, the API's message
        assert err.getvalue() == f"ptoc: error: {e.diagnostics[0].message}\n"
    else:
        assert err.getvalue() == str(e) + "\n"
    assert e.diagnostics[0].located == (code == 1)


def test_case_count():
    assert len(CASES) >= len(VERIFIER_CASES) + 15
