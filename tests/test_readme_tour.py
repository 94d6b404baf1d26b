"""The README's tour runs: every line, in order, in a fresh scratch directory (issue 19, item 7).

One bash process (``set -euo pipefail``) runs the ``sh`` block under ``## Tour`` from the clone's
root, as a reader would: ``.venv/bin`` first on PATH, HOME and TMPDIR in the test's temporary
directory (the tour's ``mktemp -d`` lands there), the tour's loopback ports swapped for free ones.
The Python API snippet under the tour runs where the README says, in the tour's directory before
its ``kill`` line. Then: bash exited 0; each step printed what it does, in order (the joint
mining result, the k the release achieved, ...); no file appeared in or vanished from the clone
(bytecode caches aside: the run writes none); no private key lies anywhere under the clone; and no
process of the run — the background daemons — outlives it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: directories of the clone not compared: git, the environment, caches other tools write
NOT_COMPARED = {".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
NOT_COMPARED |= {".grimp_cache", ".import_linter_cache"}

#: what each step prints, in the tour's order (regular expressions)
STEPS = [
    ("ppdm demo", r"identical to centralized mining"),  # horizontal
    ("ppdm demo", r"identical to centralized mining"),  # vertical
    ("ppdm demo", r"meets the requested"),  # the release re-measured
    ("ppdm demo", r"all checks passed"),
    ("ppdm bench mpc --quick", r"intersection_cardinality\s+2\s"),
    ("ppdm ca init", r"wrote ca/ca\.key"),
    ("ppdm party init --name alice", r"wrote alice/party\.toml"),
    ("ppdm party init --name bob", r"wrote bob/party\.toml"),
    ("ppdm party init --csr", r"wrote carol/carol\.csr"),
    ("ppdm ca sign", r"wrote carol\.pem"),
    ("ppdm party init --cert", r"wrote carol/party\.toml"),
    ("ppdm party analyst", r"wrote analyst/analyst\.toml"),
    ("ppdm party status", r"party alice at 127\.0\.0\.1:\d+: serving"),
    ("ppdm party status", r"carol\s+127\.0\.0\.1:\d+\s+ok"),
    # one joint run between the three daemons: its files first (stderr), then the result (stdout)
    ("ppdm mine -o --report", r"ppdm: wrote itemsets\.csv"),
    ("ppdm mine -o --report", r"ppdm: wrote mining\.html"),
    ("joint mining between the three daemons", r"transactions: 8,124\s+frequent itemsets: 2,735"),
    ("joint mining between the three daemons", r"parties alice, bob, carol"),
    ("a mistyped log level", r"ppdm: error: --log-level: unknown log level 'VERBOSE'"),
    ("the Python API snippet", r"python api: done"),
    ("ppdm mine FILE (centralized)", r"transactions: 8,124\s+frequent itemsets: 2,735"),
    ("ppdm mine --local 2 horizontal", r"transactions: 8,124\s+frequent itemsets: 2,735"),
    ("ppdm mine --local 2 vertical --json", r'"transactions": 8124'),
    ("ppdm mine --epsilon", r"frequent \(noisy, epsilon"),
    ("ppdm mine --epsilon", r"most itemsets below are noise at this ε: try ε ≥"),
    ("keyed vertical mining", r"vertical job, one data source each"),
    ("text items, horizontal", r"transactions: 1,600\s+frequent itemsets: 49"),
    ("ppdm anonymize", r"wrote out\.csv: flash: 3,016 rows .*\(k = 5\)"),
    (
        "ppdm anonymize --local 2 --split horizontal",
        r"wrote joint\.csv: joint horizontal release of 3,016 rows held by "
        r"2 parties and 1 compute-only",
    ),
    (
        "ppdm anonymize --local 2 --split vertical",
        r"wrote joint-v\.csv: joint vertical release of 3,016 rows held by 2 parties and 1 compute-only",
    ),
    ("ppdm check", r"k-anonymity\s+k = 5"),
    ("ppdm attack", r"linkage\s+\d"),
    ("ppdm perturb", r"-> noisy\.csv"),
    ("ppdm reconstruct", r"EM reconstruction"),
    ("ppdm sdc", r"local suppression \(k = 3, missing matches anything\): [0-9,]+ cell\(s\) suppressed"),
    ("ppdm sdc", r"PRAM occupation: [0-9,]+ value\(s\) changed"),
    ("ppdm dp", r"budget budget\.json: 0\.1 of 1 spent"),
    ("ppdm hide-rules", r"hiding failure\s+0 \(0 of 2 still mined\)"),
    ("ppdm audit check", r"3 answered, 1 denied"),
    ("ppdm tune", r"wrote tune\.png"),
    ("ppdm publish", r"wrote release\.csv"),
]
PEM_KEY = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")
#: files the tour leaves in its scratch directory
OUTPUTS = ["alice.log", "analyst/analyst.toml", "out.csv", "noisy.csv", "budget.json", "sanitized.dat", "tune.png"]
OUTPUTS += ["release.csv", "itemsets.csv", "mining.html", "sdc.csv", "joint.csv", "joint-v.csv"]


def tour_blocks() -> tuple[str, str]:
    """The ``sh`` block under ``## Tour`` in README.md and the ``python`` block after it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Tour\n", 1)[1].split("\n## ", 1)[0]
    sh = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    py = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert sh and py, "README.md: the tour's ```sh block and the ```python block after it"
    return sh.group(1), py.group(1)


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tour_script(sh: str, snippet: str) -> str:
    """The tour with free ports, the Python snippet before its ``kill`` line, and a line naming a failure."""
    ports = sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", sh)))
    fresh = dict(zip(ports, map(str, free_ports(len(ports)))))
    sh = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{fresh[m.group(1)]}", sh)
    lines = sh.splitlines()
    kill = [i for i, line in enumerate(lines) if line.startswith("kill %")]
    assert len(kill) == 1, "the tour stops its daemons with one 'kill %...' line"
    python = ["python - <<'PY'", snippet.rstrip("\n"), 'print("python api: done")', "PY"]
    lines[kill[0] : kill[0]] = python
    trap = "trap 'echo \"tour: line $LINENO failed ($?): $BASH_COMMAND\" >&2' ERR"
    return "\n".join(["set -euo pipefail", trap, *lines, ""])


def clone_listing() -> set[str]:
    """Every file and directory under the clone but :data:`NOT_COMPARED`, relative."""
    found = set()
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in NOT_COMPARED]
        rel = Path(root).relative_to(REPO)
        found.update(str(rel / name) for name in dirs + files)
    return found


def private_keys() -> list[str]:
    """Files under the clone (but ``.git`` and ``.venv``) holding a PEM private key."""
    hits = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv")]
        for name in files:
            path = Path(root) / name
            try:
                if PEM_KEY.search(path.read_bytes()):
                    hits.append(str(path.relative_to(REPO)))
            except OSError:  # vanished or unreadable: not a key the tour left
                pass
    return hits


def group_members(pgid: int) -> list[str]:
    """Live (not zombie) processes of process group ``pgid``: ``PID COMMAND`` each."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, _, rest = stat.read_text().rpartition(")")
            fields = rest.split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members.append(f"{stat.parent.name} {cmd.strip()}")
        except (OSError, ValueError, IndexError):  # exited meanwhile
            pass
    return members


def kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)


@pytest.mark.daemons
@pytest.mark.timeout(660)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the daemons left behind")
def test_readme_tour_runs_in_order_in_a_scratch_directory(tmp_path: Path) -> None:
    script = tour_script(*tour_blocks())
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPDM_")}
    env |= {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    before = clone_listing()
    proc = subprocess.Popen(
        ["bash", "-c", script],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # bash and everything it starts: one process group to check and kill
    )
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out = proc.communicate()[0]
        pytest.fail("the tour did not finish in 600 s; its last lines:\n" + "\n".join(out.splitlines()[-40:]))
    finally:
        deadline = time.monotonic() + 10
        while (left := group_members(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        kill_group(proc.pid)
    tail = "\n".join(out.splitlines()[-40:])
    assert proc.returncode == 0, f"the tour failed (exit {proc.returncode}); its last lines:\n{tail}"
    assert not left, f"processes of the tour outlived it: {left}"

    pos = 0
    for step, pattern in STEPS:
        m = re.compile(pattern).search(out, pos)
        assert m, f"{step}: no {pattern!r} in the tour's output after offset {pos}:\n{out[pos : pos + 2000]}"
        pos = m.end()
    assert '"correct": false' not in out

    scratch = [d for d in (tmp_path / "tmp").iterdir() if (d / "analyst").is_dir()]
    assert len(scratch) == 1, "the tour's scratch directory (mktemp -d under TMPDIR)"
    missing = [f for f in OUTPUTS if not (scratch[0] / f).is_file()]
    assert not missing, f"files the tour should have written in its scratch directory: {missing}"
    alice = (scratch[0] / "alice.log").read_text()
    assert "SIGHUP: certificates reloaded" in alice and "SIGTERM: draining" in alice and "stopped" in alice

    after = clone_listing()
    assert after == before, f"the tour changed the clone: new {sorted(after - before)}, gone {sorted(before - after)}"
    keys = private_keys()
    assert not keys, f"private keys under the clone after the tour: {keys}"
