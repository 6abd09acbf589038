"""10,000 seeded byte mutations of the PTOAS samples through parse + verify + print.

    python bench/fuzz_frontend.py [COUNT] [SEED]

Prints how many mutants were accepted, how many gave a located error, any crash (a Python
exception other than PtocError) and the slowest single run.
"""

import sys
from pathlib import Path

from pto_compiler.fuzz import fuzz

root = Path(__file__).resolve().parents[2] / "shared" / "ptoas_samples"
sources = [p.read_text() for p in sorted(root.glob("*.pto")) + sorted((root / "corpus").glob("*.pto"))]
count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
stats = fuzz(sources, count, seed)
print(f"mutants {stats.runs}: accepted {stats.accepted}, located errors {stats.located_errors}, "
      f"unlocated errors {stats.unlocated_errors}, crashes {len(stats.crashes)}, "
      f"slowest {stats.slowest_s * 1000:.0f} ms")
for message, text in stats.crashes[:5]:
    print("CRASH", message.splitlines()[0][:200])
sys.exit(1 if stats.crashes else 0)
