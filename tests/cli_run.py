"""Running ``ptoc FILE --run`` on a kernel text with given inputs, for tests that check its exit code,
output and saved results."""

from __future__ import annotations

import numpy as np

from pto_compiler import cli


def run_ptoc(tmp_path, capsys, src: str, target: str, inputs: dict, extra=()):
    """(exit code, stdout, stderr) of ``ptoc`` on ``src`` with each input saved as ``NAME.npy``;
    outputs are saved under ``tmp_path / "o"``."""
    path = tmp_path / "k.pto"
    path.write_text(src)
    args = [str(path), "--target", target, "--run", "--save-outputs", str(tmp_path / "o"), *extra]
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    rc = cli.main(args)
    out, err = capsys.readouterr()
    return rc, out, err
