"""``ppdm check``: measure k, l, t, β, δ, α, DM, CDM and re-identification risk of any table as released.

Generalized values (``*``, ``20-29``, ``Europe``) are plain categories: the table is measured
exactly as a recipient sees it, like pycanon, but vectorized and independent of the index.
The verb is a thin layer over :func:`anonymize.publish.metrics.measure_release`.

Bad input (unknown column, empty or unreadable file, NaN in a QI, unreadable hierarchy)
raises :class:`anonymize.errors.AnonymizeError`, which :func:`parties.cli.main` prints as one
line ``ppdm: error: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from anonymize.errors import AnonymizeError
from parties.cli.common import comma_list
from parties.cli.engine_args import add_database_args, add_engine_args, engine_input, engine_kwargs
from parties.cli.schema_args import add_table_args, add_utility_args, positive_int

__all__ = ["register", "run_check"]


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``check`` verb to the ``ppdm`` parser."""
    p = subparsers.add_parser(
        "check",
        help="measure k, l, t, DM and re-identification risk of a released table",
        description="Measure a table as released: k-anonymity, distinct / entropy / recursive (c,l)-diversity, "
        "t-closeness (variational, KL, EMD), basic / enhanced beta-likeness, delta-disclosure privacy, the alpha "
        "of (alpha,k)-anonymity, discernibility, CDM, average class size, and "
        "prosecutor / journalist / marketer re-identification risk.",
    )
    add_table_args(
        p,
        "table to measure (hierarchies give NCP for QIs and hierarchical EMD for sensitive columns)",
        optional_input=True,
    )
    p.add_argument(
        "--c", type=float, default=None, help="report the largest l with recursive (c,l)-diversity at this c"
    )
    p.add_argument(
        "--population",
        metavar="FILE",
        help="population table (same QI columns, in the released form) for journalist risk, delta-presence and k-map",
    )
    p.add_argument(
        "--population-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="population size: estimate the population uniques (Pitman, Zayatz, SNB, Dankar's rule); "
        "default the rows of --population",
    )
    add_utility_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", metavar="OUT.png", help="draw the class sizes and the disclosure profile of the release")
    add_engine_args(p)
    add_database_args(p)
    p.set_defaults(func=_main)
    return p


def run_check(args) -> dict:
    """Read the inputs named by ``args`` and return the :func:`measure_release` report."""
    from anonymize.engines import choose_engine, open_engine
    from anonymize.publish.io import read_hierarchies, read_table
    from anonymize.publish.metrics import measure_release
    from anonymize.publish.metrics.attack_resistance import frame_attack_resistance
    from anonymize.publish.metrics.release_utility import release_utility
    from anonymize.publish.on_engine import measure_on_engine

    qis, sens, ids = comma_list(args.qi), comma_list(args.sensitive), comma_list(args.id)
    if not qis:
        raise AnonymizeError("--qi needs at least one column")
    with engine_input(args) as src:
        needs_rows = bool(args.population or args.population_size)
        name = choose_engine(args.engine, src, needs_rows=needs_rows)
        if name != "memory" or args.input is None:
            if needs_rows:
                flag = "--population" if args.population else "--population-size"
                raise AnonymizeError(f"{flag} needs the rows in memory: use --engine memory")
            hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
            # NCP (flavour, attribute weights) and ARX's Loss from the distinct tuples and their counts
            with open_engine("duckdb" if name == "memory" else name, **engine_kwargs(args)) as eng:
                rep = measure_on_engine(
                    eng,
                    src,
                    qis,
                    sens,
                    hierarchies=hs,
                    c=args.c,
                    ncp_categorical=args.ncp_categorical,
                    weights=args.weights,
                )
            rep["input"] = str(args.input or args.duckdb or "PostgreSQL")
            return rep
    df = read_table(args.input, sep=args.sep)
    hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
    pop = read_table(args.population, sep=args.sep) if args.population else None
    rep = measure_release(df, qis, sens, ids, hierarchies=hs, c=args.c, population=pop)
    # NCP in the flavour and with the weights asked, and ARX's Loss (the same cells as measure_release's)
    rep |= release_utility(df, qis, hs, categorical=args.ncp_categorical, weights=args.weights)
    rep["attack_resistance"] = frame_attack_resistance(df, qis, sens)
    if pop is not None or args.population_size is not None:
        from anonymize.publish.metrics.population import release_population_report

        rep |= release_population_report(df, qis, pop, args.population_size)
    rep["input"] = str(args.input)
    return rep


def _fmt(x, nd=4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if x == float("inf"):
            return "inf"
        return f"{x:.{nd}g}" if abs(x) < 1e6 else f"{x:.4e}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def format_report(rep: dict) -> str:
    """Human-readable table of a :func:`measure_release` report."""
    cl = rep["classes"]
    lines = [
        f"{rep['input']}: {rep['rows']:,} rows, {len(rep['quasi_identifiers'])} quasi-identifier(s), "
        f"{len(rep['sensitive'])} sensitive",
        f"  {'equivalence classes':<22}{_fmt(cl['classes'])}  (size min {_fmt(cl['min'])}, median "
        f"{_fmt(cl['median'])}, mean {_fmt(cl['mean'])}, max {_fmt(cl['max'])})",
        f"  {'k-anonymity':<22}k = {rep['k']}",
    ]
    for s, a in rep["sensitive_attributes"].items():
        rec = a["recursive"]
        rec_s = f"(c,l) l = {rec['l']} for c > {_fmt(rec['c_bound'])}"
        if "l_at_c" in rec:
            rec_s += f"; at c = {_fmt(rec['c'])}: l = {rec['l_at_c']}"
        t = a["t"]
        t_s = (
            f"EMD({a['ground_for_emd']}) {_fmt(t['emd'])}  variational {_fmt(t['variational'])}  "
            f"KL {_fmt(t['kl'])}  EMD(ordered) {_fmt(t['emd_ordered'])}"
        )
        if "emd_hierarchical" in t:
            t_s += f"  EMD(hierarchical) {_fmt(t['emd_hierarchical'])}"
        lines += [
            f"  {s:<22}l distinct = {a['l_distinct']}, l entropy = {_fmt(a['l_entropy'])}, {rec_s}",
            f"  {'':<22}t: {t_s}",
        ]
        if "beta_basic" in a:  # beta-likeness, delta-disclosure, (alpha,k): models_sensitive
            be = a["beta_enhanced"]
            de = a["delta_disclosure"]
            lines.append(
                f"  {'':<22}beta basic {_fmt(a['beta_basic'])}  beta enhanced "
                + ("none (a class exceeds p(1 - ln p))" if be is None else _fmt(be))
                + "  delta-disclosure "
                + ("none (a value is missing from a class)" if de is None else _fmt(de))
                + f"  alpha {_fmt(a['alpha'])}"
            )
    lines.append(f"  {'utility':<22}DM {_fmt(rep['dm'])}   CDM {_fmt(rep['cdm'])}   C_avg {_fmt(rep['c_avg'])}")
    if "ncp" in rep:
        per = ", ".join(f"{k} {_fmt(v, 3)}" for k, v in rep["ncp"]["per_attribute"].items())
        flavour = rep["ncp"].get("categorical", "height") + (", weighted" if rep["ncp"].get("weighted") else "")
        lines.append(f"  {'NCP (' + flavour + ')':<22}{_fmt(rep['ncp']['ncp'])}  ({per})")
    if "loss_geometric" in rep:
        lg = rep["loss_geometric"]
        per = ", ".join(f"{k} {_fmt(v, 3)}" for k, v in lg["per_attribute"].items())
        lines.append(f"  {'Loss (ARX, geo. mean)':<22}{_fmt(lg['loss'])}  ({per})")
    r = rep["risk"]
    lines.append(
        f"  {'re-identification':<22}prosecutor max {_fmt(r['prosecutor_max'])} avg {_fmt(r['prosecutor_avg'])}"
        f" | journalist max {_fmt(r['journalist_max'])} avg {_fmt(r['journalist_avg'])}"
        f" | marketer {_fmt(r['marketer'])}"
    )
    lines.append(
        f"  {'':<22}{_fmt(r['records_in_unique_classes'])} record(s) unique on the QIs"
        + (f"; population {rep['population_rows']:,} rows" if "population_rows" in rep else "")
    )
    lines += _population_lines(rep)
    if "attack_resistance" in rep:
        ar = rep["attack_resistance"]
        by = ", ".join(f"{a.replace('_', ' ')} {v['classes']:,}" for a, v in ar["by_attack"].items())
        lines.append(
            f"  {'attack resistance:':<22}{ar['vulnerable']:,} of {ar['classes']:,} classes "
            f"({100 * ar['share_vulnerable']:.1f}%) cannot resist an attack ({by}; rule out {ar['rule_out']})"
        )
    lines.append(f"  measured in {rep['seconds']:.3f} s")
    return "\n".join(lines)


def _population_lines(rep: dict) -> list[str]:
    """The population-uniqueness estimates, δ-presence and k-map of a report (when measured)."""
    lines = []
    pu = rep.get("population_uniques")
    if pu is not None:

        def est(e):
            return "failed" if e is None else f"{_fmt(e['uniques'])} ({_fmt(e['fraction'])})"

        d = pu["dankar"]
        lines.append(
            f"  {'population uniques':<22}N = {_fmt(pu['population_size'])}, sampling fraction "
            f"{_fmt(pu['sampling_fraction'])}: Dankar ({'n/a' if d is None else d['model']}) {est(d)}"
        )
        lines.append(f"  {'':<22}Pitman {est(pu['pitman'])} | Zayatz {est(pu['zayatz'])} | SNB {est(pu['snb'])}")
    if "k_map" in rep:
        dp = rep["delta_presence"]
        dp_s = "n/a" if dp is None else f"[{_fmt(dp[0])}, {_fmt(dp[1])}]"
        extra = rep["population_unmatched_classes"]
        lines.append(
            f"  {'population':<22}delta-presence {dp_s}   k-map k = {rep['k_map']}"
            + (f"   ({extra} class(es) not in the population)" if extra else "")
        )
        absent = rep.get("population_absent_rows", 0)
        if absent:
            lines.append(
                f"  {'':<22}{absent} population row(s) fall in no released class: the release shows them "
                "absent (delta-presence with a lower bound > 0 fails)"
            )
    return lines


def _main(args) -> int:
    if args.plot:
        from parties.cli.schema_args import check_output_path

        check_output_path(args.plot, "plot")
    rep = run_check(args)  # bad input: AnonymizeError, one line and exit 2 (parties.cli.main)
    if args.plot:
        from parties.cli.plotting import plot_check

        plot_check(args.plot, args, rep)
    if args.json:
        json.dump(rep, sys.stdout, indent=2, default=float)
        sys.stdout.write("\n")
    else:
        print(format_report(rep))
    return 0
