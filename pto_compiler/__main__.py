"""``python -m pto_compiler`` runs ``ptoc``."""

import sys

from pto_compiler.cli import main

sys.exit(main())
