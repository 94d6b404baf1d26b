"""Joint publishing of Adult split by rows over 3 parties (or by columns over 2 with ``--split
vertical``) against the pooled run (issue targets).

Configurations (full-domain, Flash's optimum under DM): k = 5 with 5 % suppression (QIs age, sex,
race, marital-status, education, native-country, workclass, occupation; salary-class released as the
sensitive column), and k = 5 with distinct l = 3 and 5 % suppression (occupation sensitive — salary
has two values, so l = 3 needs a richer column — and the other seven QIs). For each: the pooled
run in this process (encode + Flash + release, :func:`anonymize.publish.anonymizer.anonymize_table`),
then the joint run on 3 local daemons (mTLS on loopback; rows in turn), timed from the analyst's
StartJob to the joined shares (daemon start-up excluded), optionally again over an emulated WAN
(``--wan``: 50 ms RTT, 100 Mbit/s). The pooled time is the median of three runs in this (warm)
process; the joint one the median of ``--repeat`` jobs on the same daemons after a first, cold job
(a fresh daemon also imports the publishing code then, about 0.3 s; printed apart). Prints both times, the ratio, whether the joint
release equals the pooled one (same DM; same rows when the same node), and bytes per party.

With ``--split vertical`` the QIs go in turn to 2 parties (the sensitive column with the last) and a
compute-only helper joins; ``--align private-id|psi`` gives every party a customer id column and
aligns by it privately first (default: by position).

With ``--algorithm mondrian`` the same two configurations run joint strict Mondrian (no suppression)
against the local Mondrian of the pooled table.

    .venv/bin/python benchmarks/bench_joint_publish.py [--adult DIR] [--wan] [--split vertical
        [--align private-id|psi]] [--algorithm flash|mondrian] [--repeat N] [--only NAME-PREFIX] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.publish import DistinctLDiversity, KAnonymity, Schema  # noqa: E402
from anonymize.publish.anonymizer import anonymize_table  # noqa: E402
from anonymize.publish.io import read_hierarchies, read_table  # noqa: E402
from parties.analyst.publishing import JointPublishing, publish_local  # noqa: E402

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
CONFIGS = [
    {"name": "k=5, 5% sup", "k": 5, "l": None, "sensitive": "salary-class", "sup": 0.05},
    {"name": "k=5 + distinct l=3 (occupation), 5% sup", "k": 5, "l": 3, "sensitive": "occupation", "sup": 0.05},
]


def _multiset(df, cols):
    return sorted(map(tuple, df[cols].astype(str).itertuples(index=False, name=None)))


def run(
    adult: Path,
    wan: bool,
    parties: int = 3,
    split: str = "horizontal",
    align: str | None = None,
    repeat: int = 1,
    only: str | None = None,
    algorithm: str = "flash",
) -> list[dict]:
    df = read_table(adult / "adult.csv")
    key = None
    if split == "vertical" and align is not None:
        key = "customer-id"
        df = df.assign(**{key: [f"c{i:06d}" for i in range(len(df))]})
    rows = []
    for cfg in CONFIGS:
        if only is not None and not cfg["name"].startswith(only):
            continue
        sens = cfg["sensitive"]
        qis = [q for q in QIS if q != sens]
        hs = read_hierarchies(adult, columns=set(qis) | {sens})
        models = [KAnonymity(cfg["k"])] + ([DistinctLDiversity(cfg["l"])] if cfg["l"] else [])
        pooled_times = []
        for _ in range(3):  # the pooled run is short and noisy: its median of three
            t = time.perf_counter()
            pooled = anonymize_table(
                df[qis + [sens]], Schema(qis, [sens]), hs, algorithm=algorithm, models=models,
                max_suppression=cfg["sup"] if algorithm == "flash" else 0.0, metric="dm", n_queries=0,
            )  # fmt: skip
            pooled_times.append(time.perf_counter() - t)
        pooled_s = statistics.median(pooled_times)
        params = JointPublishing(
            qi=tuple(qis), hierarchies={c: hs[c] for c in qis}, sensitive=sens,
            sensitive_values=tuple(str(v) for v in hs[sens].leaves), k=cfg["k"], l=cfg["l"],
            max_suppression=cfg["sup"] if algorithm == "flash" else 0.0, split=split, key=key,
            align=align or "private-id", algorithm=algorithm,
        )  # fmt: skip
        for shape in [None] + ([(50.0, 100.0)] if wan else []):
            # one cluster: the first job is cold (a fresh daemon also imports the publishing code), the
            # next ``repeat`` are what long-running daemons cost — like-for-like with the pooled runs,
            # which are timed in this warm process
            n_warm = repeat if shape is None else 1
            res = publish_local(df, params, parties, link_shape=shape, progress=False, runs=1 + n_warm)
            proto = res.report["protocol"]
            cold_s, joint_times = proto["wall_seconds_runs"][0], proto["wall_seconds_runs"][1:]
            joint_s = statistics.median(joint_times)
            if algorithm == "mondrian":  # a partition: no node; the same classes give the same rows
                same_node = True
                same_dm = abs(res.report["metrics"]["dm"] - pooled.metrics["dm"]) < 1e-6
            else:
                same_node = tuple(res.levels[c] for c in qis) == tuple(pooled.levels[c] for c in qis)
                same_dm = abs(res.report["metrics"]["dm"] - pooled.search.chosen.dm) < 1e-6
            same_rows = same_node and _multiset(res.release, qis + [sens]) == _multiset(pooled.df, qis + [sens])
            row = {
                "config": cfg["name"],
                "algorithm": algorithm,
                "split": split + (f" (align {align})" if align else ""),
                "link": "loopback" if shape is None else f"{shape[0]:g} ms RTT, {shape[1]:g} Mbit/s",
                "pooled_seconds": pooled_s,
                "pooled_runs": pooled_times,
                "joint_seconds": joint_s,
                "joint_runs": joint_times,
                "joint_cold_seconds": cold_s,
                "ratio": joint_s / pooled_s,
                "same_dm": same_dm,
                "same_node": same_node,
                "same_rows": same_rows,
                "levels": res.levels,
                "dm": res.report["metrics"]["dm"],
                "stats": proto["stats"],
                "bytes_sent": proto["bytes_sent"],
            }
            rows.append(row)
            mb = max(v or 0 for v in proto["bytes_sent"].values()) / 2**20
            st = proto["stats"]
            work = (
                f"{st.get('rounds')} rounds, {st.get('classes'):,} classes"
                if algorithm == "mondrian"
                else f"{st.get('evaluated')} nodes, {st.get('cells_evaluated', 0):,} cells"
            )
            print(
                f"{algorithm + ' ' + (cfg['name'].replace(', 5% sup', '') if algorithm == 'mondrian' else cfg['name']):<53} "
                f"{row['link']:<26} pooled {pooled_s:6.2f} s  joint {joint_s:7.2f} s "
                f"({', '.join(f'{x:.2f}' for x in joint_times)}; cold first job {cold_s:.2f})  "
                f"×{row['ratio']:5.1f}  {'same rows' if same_rows else ('same DM' if same_dm else 'DIFFERENT')}  "
                f"{work}, ≤ {mb:,.0f} MiB sent per party",
                flush=True,
            )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.environ.get("PPDM_ADULT", str(ROOT.parent / "shared" / "data" / "adult"))
    ap.add_argument("--adult", type=Path, default=Path(default))
    ap.add_argument("--wan", action="store_true", help="also run over an emulated WAN (50 ms RTT, 100 Mbit/s)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--split", choices=("horizontal", "vertical"), default="horizontal")
    ap.add_argument("--align", choices=("private-id", "psi"), default=None, help="with --split vertical")
    ap.add_argument("--repeat", type=int, default=1, help="joint runs per configuration on loopback (the median)")
    ap.add_argument("--only", default=None, help="the configurations whose name starts with this")
    ap.add_argument(
        "--algorithm",
        choices=("flash", "mondrian"),
        default="flash",
        help="flash (the optimal full-domain search) or mondrian (strict, horizontal only; no suppression)",
    )
    a = ap.parse_args(argv)
    if not (a.adult / "adult.csv").exists():
        raise SystemExit(f"no Adult data at {a.adult} (give --adult DIR or PPDM_ADULT)")
    if a.algorithm == "mondrian" and a.split != "horizontal":
        raise SystemExit("joint Mondrian runs on --split horizontal")
    rows = run(
        a.adult, a.wan, 2 if a.split == "vertical" else 3, a.split, a.align, max(1, a.repeat), a.only, a.algorithm
    )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
