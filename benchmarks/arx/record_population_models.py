"""Record ARX's δ-presence and k-map results as a test fixture (``tests/data/arx_population_models.json``).

    python benchmarks/arx/record_population_models.py [--classpath CP] [--arx-git DIR] [--out FILE]

What. Compiles ``benchmarks/arx/ArxPopulationModels.java`` (ppdm's own harness; it calls ARX's public API
only) against an ARX build and runs ARX's optimal search (Flash, discernibility metric) with ARX's
``DPresence`` and ``KMap`` criteria on a population table and a research subset of it, for the
configurations in :data:`CONFIGS`. The fixture keeps, per configuration, ARX's chosen node, its DM, ARX's
verdict on every lattice node it decided, ARX's equivalence-class statistics of the release, and the
per-class figures the harness measures on ARX's output — plus the data's checksums, the rule that rebuilds
the research subset, and the provenance (ARX commit, date, command).

Why. ppdm's :class:`anonymize.publish.models_population.DeltaPresence` and ``KMap`` implement ARX's models
(δ-presence: M. E. Nergiz, M. Atzori, C. Clifton, "Hiding the presence of individuals from shared
databases", SIGMOD 2007; k-map: K. El Emam, F. K. Dankar, "Protecting privacy using k-anonymity", JAMIA
2008); ``tests/test_arx_population_models.py`` runs ppdm's search on the same data and compares it with
ARX's recorded answers, without needing Java or ARX in CI.

Data. The population is ARX's own ``adult_subset.csv`` (3,016 Adult rows, bundled in ``anonymize/data``
with ARX's hierarchies, so the test needs nothing else); the research subset is the rows ``i`` (0-based
data rows) with ``(i · 2654435761) mod 2³² < 1288490189`` — Knuth's multiplicative hash, ≈ 30 % of the
rows, spread evenly over the file (905 rows). QIs: age, sex, race, marital-status, education (a
240-node lattice; ARX runs in a few seconds).

ARX. ``--classpath`` is an ARX build's classpath (default: the contents of ``/tmp/arx/build2/classpath.txt``;
``benchmarks/arx/build_arx.py`` builds one from ARX's sources); ``--arx-git`` a git directory of ARX's
repository whose ``HEAD`` the build was made from (default: ``/work/.mirror/arx-deidentifier+arx/repo``) —
its commit and date go into the fixture (``--arx-commit`` overrides). Needs a JDK (``javac``, ``java``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent / "ArxPopulationModels.java"
DATA = ROOT / "anonymize" / "data"
POPULATION = DATA / "adult_subset.csv"
OUT = ROOT / "tests" / "data" / "arx_population_models.json"
DEFAULT_CLASSPATH_FILE = Path("/tmp/arx/build2/classpath.txt")
DEFAULT_ARX_GIT = Path("/work/.mirror/arx-deidentifier+arx/repo")

QIS = ["age", "sex", "race", "marital-status", "education"]
MULTIPLIER = 2654435761
THRESHOLD = 1288490189  # ⌈0.3 · 2³²⌉: about 30 % of the rows
CONFIGS = [
    "delta:0.0:0.5:0.0",  # δmin = 0: population-only classes pass in every reading
    "delta:0.1:0.5:0.0",
    "delta:0.1:0.5:0.05",
    "delta:0.1:0.5:0.05:k1",  # the same with ARX's KAnonymity(1), which holds trivially
    "delta:0.2:0.45:0.05",
    "delta:0.1:0.5:0.0:k2",
    "kmap:5:0.0",
    "kmap:10:0.05",
]
"""``delta:DMIN:DMAX:SUP[:kK]`` and ``kmap:K:SUP[:kK]`` as ArxPopulationModels.java reads them."""


def research_indices(n_rows: int, multiplier: int = MULTIPLIER, threshold: int = THRESHOLD) -> np.ndarray:
    """The research subset: data rows ``i`` with ``(i · multiplier) mod 2³² < threshold`` (sorted)."""
    i = np.arange(n_rows, dtype=np.uint64)
    return np.flatnonzero((i * np.uint64(multiplier)) % np.uint64(2**32) < np.uint64(threshold))


def indices_sha256(indices) -> str:
    """sha256 of the indices written as decimal numbers joined by commas (how the fixture pins the subset)."""
    return hashlib.sha256(",".join(str(int(i)) for i in indices).encode()).hexdigest()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_spec(spec: str) -> dict:
    """A configuration of :data:`CONFIGS` as a dict (model, δmin/δmax or k of k-map, suppression, k)."""
    p = spec.split(":")
    out: dict = {"spec": spec, "model": p[0], "k": None}
    if p[0] == "delta":
        out |= {"dmin": float(p[1]), "dmax": float(p[2]), "suppression": float(p[3])}
        rest = p[4:]
    elif p[0] == "kmap":
        out |= {"k_map": int(p[1]), "suppression": float(p[2])}
        rest = p[3:]
    else:
        raise ValueError(f"unknown model in {spec!r}")
    for opt in rest:
        if not opt.startswith("k"):
            raise ValueError(f"unknown option {opt!r} in {spec!r}")
        out["k"] = int(opt[1:])
    return out


def arx_provenance(arx_git: Path | None, commit: str | None) -> dict:
    """ARX's commit and its date from ``arx_git`` (a git directory), unless ``commit`` is given."""
    if commit:
        return {"arx_commit": commit, "arx_commit_date": None}
    if arx_git is None or not arx_git.exists():
        return {"arx_commit": None, "arx_commit_date": None}
    p = subprocess.run(
        ["git", "-C", str(arx_git), "log", "-1", "--format=%H %cI"], capture_output=True, text=True, check=True
    )
    sha, date = p.stdout.split()
    return {"arx_commit": sha, "arx_commit_date": date}


def run_arx(classpath: str, configs: list[str]) -> list[dict]:
    """Compile the harness against ``classpath`` and run it: one JSON object per line (subset first)."""
    if not shutil.which("javac") or not shutil.which("java"):
        raise SystemExit("needs a JDK (javac and java on PATH)")
    out_dir = Path(tempfile.mkdtemp(prefix="ppdm-arx-pop-"))
    try:
        p = subprocess.run(
            ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(out_dir), "-cp", classpath, str(HARNESS)],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise SystemExit(f"compiling the harness failed (is the classpath an ARX build?): {p.stderr[-400:]}")
        cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-cp", f"{classpath}:{out_dir}", "ArxPopulationModels"]
        cmd += [str(POPULATION), str(DATA), ",".join(QIS), str(MULTIPLIER), str(THRESHOLD), *configs]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"the ARX run failed: {p.stderr[-400:]}")
        return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def java_version() -> str:
    p = subprocess.run(["java", "-version"], capture_output=True, text=True)
    return (p.stderr or p.stdout).splitlines()[0].strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classpath", help=f"an ARX build's classpath (default: the contents of {DEFAULT_CLASSPATH_FILE})")
    ap.add_argument("--arx-git", type=Path, default=DEFAULT_ARX_GIT, help="git directory of the ARX sources built")
    ap.add_argument("--arx-commit", help="ARX commit of the build (default: HEAD of --arx-git)")
    ap.add_argument("--out", type=Path, default=OUT, help="the fixture to write")
    a = ap.parse_args(argv)
    classpath = a.classpath or DEFAULT_CLASSPATH_FILE.read_text().strip()

    import pandas as pd

    pop = pd.read_csv(POPULATION, sep=";")
    idx = research_indices(len(pop))
    lines = run_arx(classpath, CONFIGS)
    head, rows = lines[0], lines[1:]
    if (head["population_rows"], head["subset_rows"], head["subset_index_sum"]) != (
        len(pop),
        len(idx),
        int(idx.sum()),
    ):
        raise SystemExit(f"ARX's research subset differs from this script's: {head} vs {len(idx)} rows")
    configs = []
    for spec, r in zip(CONFIGS, rows):
        assert r["spec"] == spec, (spec, r["spec"])
        cfg = parse_spec(spec)
        cfg |= {
            "arx_levels": r["levels"],
            "arx_dm": None if r["levels"] is None else float(r["score"]),
            "arx_checked": r["checked"],
            "arx_lattice": r["lattice"],
            "arx_classes": r.get("classes"),
            "measured_on_arx_output": r.get("measured"),
        }
        configs.append(cfg)
    command = "python benchmarks/arx/record_population_models.py " + " ".join(
        shlex.quote(x) for x in (sys.argv[1:] if argv is None else argv)
    )
    fixture = {
        "description": (
            "ARX's optimal full-domain search (Flash, discernibility metric) with DPresence and KMap (research "
            "subset) on a population table; written by benchmarks/arx/record_population_models.py, read by "
            "tests/test_arx_population_models.py"
        ),
        "provenance": {
            "arx_repository": "https://github.com/arx-deidentifier/arx",
            **arx_provenance(a.arx_git, a.arx_commit),
            "arx_build": "src/main of that commit compiled with benchmarks/arx/build_arx.py (ARX's code unmodified)",
            "java": java_version(),
            "recorded": dt.date.today().isoformat(),
            "command": command.strip(),
            "harness": "benchmarks/arx/ArxPopulationModels.java",
            "harness_sha256": sha256(HARNESS),
        },
        "data": {
            "population": str(POPULATION.relative_to(ROOT)),
            "population_sha256": sha256(POPULATION),
            "population_rows": len(pop),
            "hierarchies": {q: f"{DATA.relative_to(ROOT)}/adult_hierarchy_{q}.csv" for q in QIS},
            "hierarchies_sha256": {q: sha256(DATA / f"adult_hierarchy_{q}.csv") for q in QIS},
            "qis": QIS,
        },
        "research_subset": {
            "rule": "data row i (0-based, header excluded) of the population CSV is in the subset iff "
            "(i * multiplier) mod 2**32 < threshold",
            "multiplier": MULTIPLIER,
            "threshold": THRESHOLD,
            "rows": len(idx),
            "index_sum": int(idx.sum()),
            "indices_sha256": indices_sha256(idx),
        },
        "search": {
            "algorithm": "ARXAnonymizer (Flash), optimal",
            "metric": "Metric.createDiscernabilityMetric() (ARX MetricSDNMDiscernability; ppdm metric 'dm')",
            "suppression": "ARXConfiguration.setSuppressionLimit(suppression): at most floor(suppression * research "
            "rows) rows suppressed (ppdm: max_suppression with suppressed_rows='arx')",
        },
        "fields": {
            "arx_levels": "ARX's global optimum: generalization level per QI",
            "arx_dm": "ARX's information loss (DM) of the optimum",
            "arx_lattice": "one character per lattice node, nodes in lexicographic order of their level vectors "
            "(QI order of data.qis): A/N anonymous/not anonymous, checked by ARX; a/n inferred by ARX without a "
            "check; p/q probably (not) anonymous; ?/. unknown or not in ARX's lattice",
            "arx_classes": "ARX's StatisticsEquivalenceClasses of the optimum's research-subset view",
            "measured_on_arx_output": "per released class of ARX's research-subset view (rows not suppressed): "
            "rows / population rows (min, max) and population rows (min), the population generalized with the "
            "hierarchy files at the optimum's levels; population_only_classes: generalized population classes "
            "without any research row",
        },
        "configurations": configs,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    for c in configs:
        print(f"{c['spec']:<24} ARX node {c['arx_levels']}  DM {c['arx_dm']}")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
