"""Where ptoc stands on the real PTOAS corpus: every ``.pto`` file of ``ptoas_samples/`` (and its
``corpus/``), run as a user would run it, classified by how far it gets.

    python bench/corpus_status.py [--json OUT.json] [--diff BEFORE.json] [-j N] [FILE ...]

Per file: the target (``--pto-arch`` of its RUN line, else what ptoc picks from the module), then
``ptoc FILE`` (compile) and ``ptoc FILE --run`` (execute + compare with the golden model).
Classes: ``negative-ok`` (a file PTOAS rejects, as tests/samples.is_negative says, ptoc rejects
too; a file with a RUN line PTOAS accepts as well counts as positive, its ``not ptoas`` lines
are tests/test_corpus_negative.py's), ``negative-accepted``, ``no-compile`` (with the first
error line), ``no-run`` (compiles; --run fails, with the reason), ``run`` (runs, compares
nothing: no GM output, no tprint, no tile the ``--run`` harness can move, passes/tile_harness.py),
``PASS`` (runs, at least one output compared and all PASS), ``MISMATCH``, ``ill-conditioned``
(``--run``'s exit 5: only the float summation order decides the mismatch).  Integer scalar
arguments get the values of ``SCALAR_INPUTS`` (test_corpus_positive's, else 1), and a file of
several kernels its ``--entry`` (a file past the GM limit its ``--max-gm-bytes``), as a test
would supply them.  ``--diff`` prints the files whose class changed since a saved ``--json``.
This is the one corpus status script: the vector and cube work both report from it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PTOC_SHARED") or REPO.parent / "shared")
SAMPLES_DIR = SHARED / "ptoas_samples"
TIMEOUT_S = 120
BIG_GM_TIMEOUT_S = 900
"""A file run with a raised ``--max-gm-bytes`` (hundreds of MB of GM: a minute or two unloaded)."""
sys.path.insert(0, str(REPO / "tests"))  # the tests' rules: what a negative file is, the scalars per file
from samples import is_negative  # noqa: E402


def _runs() -> dict:
    """tests/test_corpus_positive.py's files -> (ptoc flags, compared?), its big-GM files included."""
    from test_corpus_positive import BIG_GM, RUNS

    return {**RUNS, **{name: (flags, True) for name, flags in BIG_GM.items()}}


def scalar_inputs() -> dict[str, dict[str, str]]:
    """Per file stem: the integer scalars tests/test_corpus_positive.py runs the file with (the one
    table of scalars that make a corpus file meaningful: loop bounds, valid shapes, offsets)."""
    out = {}
    for name, (flags, _) in _runs().items():
        pairs = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "--input"]
        out[Path(name).stem] = dict(p.split("=", 1) for p in pairs)
    return out


def entry_flags() -> dict[str, list[str]]:
    """Per file stem: the ``--entry`` (a file of several kernels) and ``--max-gm-bytes`` (a file
    whose GM is past the default limit) test_corpus_positive runs the file with."""
    return {Path(name).stem: [x for f in ("--entry", "--max-gm-bytes") if f in flags
                              for x in (f, flags[flags.index(f) + 1])]
            for name, (flags, _) in _runs().items() if "--entry" in flags or "--max-gm-bytes" in flags}


SCALAR_INPUTS = scalar_inputs()
ENTRIES = entry_flags()
DEFAULT_INT = "1"


def corpus_files() -> list[Path]:
    return sorted(SAMPLES_DIR.glob("*.pto")) + sorted((SAMPLES_DIR / "corpus").glob("*.pto"))


def run_lines(text: str) -> list[str]:
    return [line.split("RUN:", 1)[1] for line in text.splitlines()[:12] if "RUN:" in line]


def target_of(text: str) -> list[str]:
    for line in run_lines(text):
        m = re.search(r"--pto-arch[= ](a3|a5|a2a3)", line)
        if m:
            return ["--target", m.group(1)]
    return []


def level_of(text: str) -> list[str]:
    """PTOAS's ``--pto-level`` of the RUN line: its level rules (tassign, ``addr=``) apply only with it."""
    for line in run_lines(text):
        m = re.search(r"--pto-level[= ](level[123])", line)
        if m:
            return ["--pto-level", m.group(1)]
    return []


def ptoc(args: list[str]) -> tuple[int, str, str]:
    timeout = BIG_GM_TIMEOUT_S if "--max-gm-bytes" in args else TIMEOUT_S
    try:
        p = subprocess.run([sys.executable, "-m", "pto_compiler", *args], capture_output=True, text=True,
                           timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return -1, "", f"timeout after {timeout} s"
    return p.returncode, p.stdout, p.stderr


def reason(stderr: str) -> str:
    """The first diagnostic line, with the file prefix and SSA noise cut to a short class."""
    for line in stderr.splitlines():
        if "error" in line or "timeout" in line or "race" in line or "deadlock" in line:
            msg = re.sub(r"^\S*\.pto:\d+:\d+: ", "", line.strip())
            msg = re.sub(r"<OpResult\[.*?\]>", "<tile>", msg)
            msg = re.sub(r"<OpResult\[.*", "<tile>", msg)
            return msg[:160]
    return (stderr.strip().splitlines() or ["?"])[0][:160]


def classify(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    target = target_of(text)
    flags = target + level_of(text)
    name = path.name
    rec = {"file": name, "target": (target[1] if target else "")}
    code, _, err = ptoc([str(path), *flags])
    # a file with both a `not ptoas` RUN line and a plain one is positive here (the negative-corpus test
    # takes its `not` lines); an `*_invalid` file whose only RUN pipes ptoas's error to FileCheck is negative
    mixed = "not ptoas" in text and any(line.strip().startswith("ptoas") for line in run_lines(text))
    if is_negative(path) and not mixed:
        rec["class"] = "negative-ok" if code == 1 else "negative-accepted"
        rec["reason"] = "" if code == 1 else f"exit {code}: {reason(err)}"
        return rec
    if code != 0:
        rec.update({"class": "no-compile", "reason": f"exit {code}: {reason(err)}"})
        return rec
    inputs: list[str] = []
    for _ in range(2):
        code, out, err = ptoc([str(path), *flags, "--run", *ENTRIES.get(path.stem, []), *inputs])
        m = re.search(r"integer/index scalar argument\(s\) ([\w, ]+?) (?:need|must|are|is)", err)
        if code != 2 or not m or inputs:
            break
        given = SCALAR_INPUTS.get(path.stem, {})
        for arg in (a.strip() for a in m.group(1).split(",")):
            inputs += ["--input", f"{arg}={given.get(arg, DEFAULT_INT)}"]
    compared = [line for line in out.splitlines() if line.startswith(("PASS", "FAIL", "MISMATCH"))]
    if code == 0 and compared:
        rec["class"] = "PASS"
    elif code == 0:
        rec["class"] = "run"
        rec["reason"] = (out.strip().splitlines() or ["no output compared"])[-1][:160]
    elif code == 3:
        rec.update({"class": "MISMATCH", "reason": "; ".join(compared)[:160]})
    elif code == 5:
        rec.update({"class": "ill-conditioned", "reason": "; ".join(compared)[:160]})
    else:
        rec.update({"class": "no-run", "reason": f"exit {code}: {reason(err)}"})
    return rec


ORDER = ("PASS", "run", "MISMATCH", "ill-conditioned", "no-run", "no-compile", "negative-ok", "negative-accepted")


def summary(records: list[dict[str, str]]) -> str:
    counts = {c: sum(r["class"] == c for r in records) for c in ORDER}
    positive = [r for r in records if not r["class"].startswith("negative")]
    compiled = sum(r["class"] in ("PASS", "run", "MISMATCH", "ill-conditioned", "no-run") for r in positive)
    ran = sum(r["class"] in ("PASS", "run", "MISMATCH", "ill-conditioned") for r in positive)
    return (f"{len(records)} files ({len(positive)} positive, {len(records) - len(positive)} negative): "
            f"compile {compiled}, run {ran}, compare-PASS {counts['PASS']}; "
            + ", ".join(f"{c} {n}" for c, n in counts.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--json", type=Path, help="save the records here")
    ap.add_argument("--diff", type=Path, help="a --json file from before: print the files whose class changed")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    files = args.files or corpus_files()
    if not files:
        print(f"no corpus at {SAMPLES_DIR} (set PTOC_SHARED)", file=sys.stderr)
        return 2
    big = [f for f in files if "--max-gm-bytes" in ENTRIES.get(f.stem, [])]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        records = list(pool.map(classify, [f for f in files if f not in big]))
    records += [classify(f) for f in big]  # hundreds of MB of GM each: one at a time (two at once ran out of memory)
    for r in sorted(records, key=lambda r: (ORDER.index(r["class"]), r["file"])):
        print(f"{r['class']:<18} {r['target'] or '-':<5} {r['file']:<75} {r.get('reason', '')}")
    print(summary(records))
    if args.diff:
        before = {r["file"]: r for r in json.loads(args.diff.read_text())}
        for r in records:
            old = before.get(r["file"], {}).get("class", "-")
            if old != r["class"]:
                print(f"changed: {r['file']}: {old} -> {r['class']}")
        print("before: " + summary(list(before.values())))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
