"""ARX's Loss under a generalization/suppression factor, side by side with ARX built from source.

For each configuration ``k:SUP:loss@G[:lL]`` (Adult, the 8 QIs of ``bench_anonymize.py``, ARX's
outlier semantics ``suppressed_rows='arx'``) ARX's optimum (``ArxSideBySide``,
``Metric.createLossMetric(G)``) and ppdm's (``anonymize_table(metric='loss', gs_factor=G)``, Flash)
are printed with their scores: the same node, or — where several nodes share the best score, as at
G = 1 when every node that suppresses nothing scores 0 — a different node of the same score.

    .venv/bin/python benchmarks/arx_gs_factor.py --arx CLASSPATH [--adult DIR] [SPEC ...]

CLASSPATH: an ARX build (``benchmarks/arx/build_arx.py``; ``benchmarks/README.md``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_anonymize as B

from anonymize.publish import Schema
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.io import read_hierarchies, read_table

SPECS = [
    "5:0.05:loss@0.0",
    "5:0.05:loss@0.05",
    "5:0.05:loss@0.3",
    "5:0.05:loss@0.5",
    "5:0.05:loss@0.7",
    "5:0.05:loss@1.0",
    "10:0.2:loss@0.0",
    "10:0.2:loss@0.2",
    "10:0.2:loss@0.9",
    "5:0.05:loss@0.05:l2",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arx", required=True, metavar="CLASSPATH", help="an ARX build's classpath")
    ap.add_argument(
        "--adult", type=Path, default=None, help="Adult directory (default: $PPDM_ADULT or ../shared/data/adult)"
    )
    ap.add_argument("specs", nargs="*", default=SPECS, help="k:SUP:loss@G[:lL] (default: the list above)")
    args = ap.parse_args()
    adult = args.adult or B.default_adult()
    if not (adult / "adult.csv").exists():
        raise SystemExit(f"no adult.csv in {adult} (give --adult DIR)")
    for spec in args.specs:
        if ":loss@" not in spec:
            raise SystemExit(f"a configuration is k:SUP:loss@G[:lL], got {spec!r}")
    out_dir = B.compile_arx_harness(args.arx, "ArxSideBySide.java")
    p = subprocess.run(
        ["java", "-Xmx2g", "-cp", f"{args.arx}:{out_dir}", "ArxSideBySide", str(adult), "0", "1", *args.specs],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise SystemExit(f"ARX failed: {p.stderr.strip()[-300:]}")
    arx = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    df = read_table(adult / "adult.csv")
    same = 0
    for spec, a in zip(args.specs, arx):
        parts = spec.split(":")
        gs = float(parts[2][len("loss@") :])
        cfg = B.parse_spec(":".join(parts[:2] + ["dm"] + parts[3:]))
        qis, sens, cols, models = B.config_roles(cfg)
        hs = read_hierarchies(adult, columns=cols)
        r = anonymize_table(
            df[qis + sens], Schema(qis, sens), hs, algorithm="flash", models=models, max_suppression=cfg[1],
            metric="loss", gs_factor=gs, suppressed_rows="arx", n_queries=0,
        )  # fmt: skip
        node = all(r.levels[q] == a["levels"][q] for q in qis)
        score_a, score_p = float(a["score"]), float(r.search.chosen.loss)
        same += node
        verdict = "same node" if node else "other node, same score" if abs(score_a - score_p) < 1e-9 else "DIFFERENT"
        print(f"{spec:<22} ARX {score_a:.10f}  ppdm {score_p:.10f}  {verdict}")
        if not node:
            print(f"{'':<22} ARX {a['levels']}\n{'':<22} ppdm {r.levels}")
    print(f"{same} of {len(arx)} configurations: the same node")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
