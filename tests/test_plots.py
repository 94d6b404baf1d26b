"""``--plot`` on ``ppdm anonymize``, ``ppdm tune`` and ``ppdm check``: PNG files written, non-empty,
of the expected shape (read back with matplotlib's image reader) — not compared pixel by pixel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from anonymize.publish import plots
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = "age,sex,race,marital-status,education,workclass"
COMMON = ["--qi", QIS, "--sensitive", "occupation", "--hierarchies", str(DATA)]


def check_png(path: Path, panels: int) -> np.ndarray:
    assert path.is_file() and path.stat().st_size > 10_000
    img = mpimg.imread(str(path))
    h, w = img.shape[:2]
    assert img.ndim == 3 and img.shape[2] in (3, 4)
    assert h >= 300 and w >= 500 * panels  # panels side by side
    assert img[..., :3].std() > 0.05  # something is drawn
    assert not list(path.parent.glob(f".{path.name}.*"))  # no temporary file left behind
    return img


@pytest.mark.parametrize(
    "extra,panels",
    [
        (["--algorithm", "flash", "--k", "5", "--max-suppression", "0.02"], 2),
        (["--algorithm", "mondrian", "--k", "5", "--l", "3"], 2),
        (["--algorithm", "mondrian", "--k", "4", "--t", "0.4"], 2),
    ],
)
def test_anonymize_plot(capsys, tmp_path, extra, panels):
    png = tmp_path / "a.png"
    code = main(
        ["anonymize", str(SUBSET), "-o", str(tmp_path / "o.csv"), *COMMON, *extra, "--plot", str(png), "--quiet"]
    )
    assert code == 0, capsys.readouterr()[1]
    check_png(png, panels)


def test_check_plot(capsys, tmp_path):
    out, png = tmp_path / "o.csv", tmp_path / "c.png"
    assert (
        main(["anonymize", str(SUBSET), "-o", str(out), *COMMON, "--algorithm", "mondrian", "--k", "5", "--quiet"]) == 0
    )
    assert main(["check", str(out), "--qi", QIS, "--sensitive", "occupation", "--plot", str(png)]) == 0
    check_png(png, 2)


def test_tune_plot(capsys, tmp_path):
    png = tmp_path / "t.png"
    code = main(
        ["tune", str(SUBSET), *COMMON, "--pmax", "0.5", "--quality-bound", "0.55", "--quality-metric", "ncp"]
        + ["--max-suppression", "0.02", "--k-range", "2:15", "--plot", str(png), "--quiet"]
    )
    assert code == 0, capsys.readouterr()[1]
    check_png(png, 4)  # k, l, t curves and the class sizes


def test_a_plot_path_in_a_missing_directory_is_refused_before_any_work(capsys, tmp_path):
    out = tmp_path / "o.csv"
    code = main(
        ["anonymize", str(SUBSET), "-o", str(out), *COMMON, "--algorithm", "flash", "--k", "5"]
        + ["--plot", str(tmp_path / "nope" / "a.png")]
    )
    err = capsys.readouterr()[1]
    assert code == 2 and err.startswith("ppdm: error: plot directory does not exist") and len(err.splitlines()) == 1
    assert not out.exists()


def test_drawing_functions_cope_with_empty_and_degenerate_input(tmp_path):
    rows = [{"k": 2, "ok": False, "error": "none"}, {"k": 3, "ok": True, "ncp": 0.5, "cdm": 9.0, "disclosure": 1.0}]
    fig, axes = plots.new_figure(3)
    plots.draw_tradeoff(axes[0], rows, "k", pmax=0.5, bound=0.4, chosen=3)
    plots.draw_class_sizes(axes[1], [], k=2)
    plots.draw_disclosure_profile(axes[2], [4, 4], [0.5, 0.25], pmax=0.5)
    plots.save_figure(fig, tmp_path / "x.png")
    check_png(tmp_path / "x.png", 3)
