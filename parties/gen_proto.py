"""Regenerate the Python code for the wire contract in ``protos/``.

    python -m parties.gen_proto            # rewrite parties/proto/ in this checkout
    python -m parties.gen_proto --out DIR  # write DIR/parties/proto/... instead

The ``.proto`` files live in ``protos/ppdm/v1/``; protoc sees them under the
virtual path ``parties/proto/`` (``-I parties/proto=protos``), so the generated
modules import each other as ``parties.proto.ppdm.v1...`` and need no
post-processing. The generated files are committed; ``tests/test_daemon_proto.py``
regenerates them into a temporary directory and fails if they are stale.
Needs ``grpcio-tools`` (a test dependency), pinned to the same version as ``grpcio``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["ROOT", "PROTO_DIR", "generate", "generated_files"]

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"
PACKAGE = "parties/proto"

_INIT_DOC = '"""Generated gRPC/protobuf code for the ppdm wire contract (``python -m parties.gen_proto``)."""\n'


def _protos() -> list[Path]:
    return sorted(PROTO_DIR.rglob("*.proto"))


def generate(out_root: Path | str = ROOT) -> list[Path]:
    """Run protoc on every ``protos/**/*.proto``; return the files written under ``out_root``."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:  # pragma: no cover - grpcio-tools is a test dependency
        raise SystemExit(
            "gen_proto: grpcio-tools is not installed (pip install 'grpcio-tools==<grpcio version>')"
        ) from None
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    protos = _protos()
    if not protos:
        raise SystemExit(f"gen_proto: no .proto files under {PROTO_DIR}")
    args = [
        "grpc_tools.protoc",
        f"-I{PACKAGE}={PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *[f"{PACKAGE}/{p.relative_to(PROTO_DIR).as_posix()}" for p in protos],
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise SystemExit(f"gen_proto: protoc failed with exit code {rc}")
    # every directory from parties/proto down must be a package
    for p in protos:
        d = out_root / PACKAGE / p.relative_to(PROTO_DIR).parent
        while True:
            init = d / "__init__.py"
            if not init.exists():
                init.write_text(_INIT_DOC)
            if d == out_root / PACKAGE:
                break
            d = d.parent
    return generated_files(out_root)


def generated_files(root: Path | str = ROOT) -> list[Path]:
    """Every generated file under ``root/parties/proto`` (sorted, relative to ``root``)."""
    base = Path(root) / PACKAGE
    return sorted(p.relative_to(root) for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parties.gen_proto", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=ROOT, help="root to write parties/proto/ under (default: this checkout)"
    )
    args = ap.parse_args(argv)
    for f in generate(args.out):
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
