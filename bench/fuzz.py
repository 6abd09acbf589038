"""The long fuzz campaign of issue 15, with a time budget:

    python bench/fuzz.py [--minutes M] [--seed S] [--mutants N] [--kernels K] [--save DIR]

Byte-, token- and structure-level mutants of the examples and lit inputs, and random well-typed
kernels (pto_compiler/fuzz_kernels.py), each run as ``ptoc FILE --target T --run`` on both
targets (10 CPU seconds per run).  Prints the runs and exit codes per kind and target, then every
internal error, timeout and failing generated kernel; generated kernels whose FAIL the golden
model's summation order decides (ill-conditioned, pto_compiler.fuzz.order_dependent) and mutants
that end in exit 3/4 are listed for review, and the peak RSS (it must not grow with the budget).
``--save DIR`` writes each of those cases as DIR/<n>-<kind>-<target>.pto, headed by what was found, the
``ptoc`` flags of its run and what a fixed ptoc must give (pto_compiler.fuzz.case_file): dropped into
tests/fuzz/cases, it runs there as it ran here.  Exit 1 if anything failed (ill-conditioned kernels do not count).
"""

import argparse
import resource
import sys
from pathlib import Path

from pto_compiler.fuzz import Campaign, campaign, case_file, repo_sources

REPO = Path(__file__).resolve().parents[1]

p = argparse.ArgumentParser()
p.add_argument("--minutes", type=float, default=25.0)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--mutants", type=int, default=10_000)
p.add_argument("--kernels", type=int, default=2_000)
p.add_argument("--save", type=Path)
args = p.parse_args()

res = Campaign()
try:
    campaign(repo_sources(REPO), args.seed, args.mutants, args.kernels, budget_s=args.minutes * 60, result=res)
except KeyboardInterrupt:
    print("interrupted: figures so far")
print(res.summary())
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
cases = [("failure", c) for c in res.failures] + [("ill-conditioned", c) for c in res.ill_conditioned] + \
    [("exit-3/4", c) for c in res.mismatches]
for n, (why, (kind, target, text, out)) in enumerate(cases):
    print(f"--- {why} #{n}: {kind} on {target}\n{out.strip()[-800:]}")
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / f"{n}-{kind}-{target}.pto").write_text(
            case_file(kind, target, text, why, res.flags.get((kind, target, text)), args.seed))
sys.exit(1 if res.failures else 0)
