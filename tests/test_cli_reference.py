"""``ptoc FILE --reference``: golden-model runs from the command line (real front end)."""

from __future__ import annotations

import numpy as np

from pto_compiler import cli

ROWEXPAND = ("%d = pto.trowexpandmax %a, %b : !pto.tile<16x64xf32>, "
             "!pto.tile<16x1xf32, blayout=col_major> -> !pto.tile<16x64xf32>\n")


def test_reference_on_example_saves_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["examples/vadd.pto", "--target", "a2a3", "--reference", "--seed", "3",
                   "--save-outputs", str(out)])
    assert rc == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("z: shape=32x32 dtype=f32 ")
    assert (out / "z.npy").exists()


def test_reference_with_given_inputs_matches_numpy(tmp_path, capsys):
    src = tmp_path / "k.pto"
    src.write_text(ROWEXPAND)
    a = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) - 500
    b = np.linspace(-300, 300, 16, dtype=np.float32).reshape(16, 1)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    rc = cli.main([str(src), "--reference", "--input", f"a={tmp_path / 'a.npy'}",
                   "--input", f"b={tmp_path / 'b.npy'}", "--save-outputs", str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    got = np.load(tmp_path / "o" / "result0.npy")
    assert np.array_equal(got, np.maximum(a, b))


def test_reference_wrong_input_shape_is_usage_error(tmp_path, capsys):
    src = tmp_path / "k.pto"
    src.write_text(ROWEXPAND)
    np.save(tmp_path / "a.npy", np.zeros((3, 3), np.float32))
    rc = cli.main([str(src), "--reference", "--input", f"a={tmp_path / 'a.npy'}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "a" in err and err.count("\n") == 1
