"""What the lane's routing costs per op here against another revision, in instructions (valgrind).

For the routing paths of ``Lane`` (``Lane.run`` with an engine that answers, declines or
faults; ``Lane.run_batch`` of 16 ops to an engine that answers; ``Lane.in_force`` on the
default provider), one process per side (this tree's ``src``, and ``--against REV``'s, taken
with ``git archive``) runs the case N and then 6N times under callgrind; the difference of the
two totals over 5N is the instructions per op without start-up. Both sides use this tree's
compiled direct path (copied next to the other revision's sources; the line says which twin
each side loaded). The engine is a measuring double that answers with fixed bytes, so that
what is counted is the routing and not a cipher. Instruction counts do not move with the
machine's load, unlike times; they are not times (see ``overhead_instructions.py``).
Needs valgrind and git.

Run: python benchmarks/routing_core_instructions.py --against REV [--ops N] [--only LIST]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ("answer", "decline", "fault", "batch", "in_force")

#: The child: one side of one case, run ``ops`` times; prints which direct-path twin it loaded.
CHILD = r"""
import sys
case, ops = sys.argv[1], int(sys.argv[2])
import cryptoffload
from cryptoffload import Policy, Provider, directpath
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import Unavailable
from cryptoffload.ops import AeadOp  # the old path: both sides import it

ALG = "aes-128-gcm"
SEALED = bytes(80)


class Double:
    name = "double"

    def __init__(self, mode):
        self.mode = mode

    def probe(self):
        return Capabilities(available=True, algorithms=frozenset([ALG]))

    def run(self, op):
        if self.mode == "decline":
            raise Unavailable("busy")
        if self.mode == "fault":
            raise OSError(5, "device error")
        return SEALED


mode = {"decline": "decline", "fault": "fault"}.get(case, "answer")
provider = Provider([Double(mode)], Policy())
lane = provider.lane(ALG)
op = AeadOp(ALG, "encrypt", bytes(16), bytes(12), bytes(64), b"", 16)
if case == "in_force":
    cryptoffload.set_default_provider(provider)
    in_force = lane.in_force
    for _ in range(ops):
        in_force(None)
elif case == "batch":
    batch = [op] * 16
    for _ in range(ops // 16):
        lane.run_batch(batch)
else:
    run = lane.run
    for _ in range(ops):
        run(op)
print("compiled" if directpath.COMPILED else "pure")
"""


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text}")
    return value


def cases(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CASES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(CASES)}, got {text!r}")
    return names


def other_tree(rev: str, into: pathlib.Path) -> pathlib.Path:
    """``rev``'s ``src`` extracted under ``into``, with this tree's compiled direct path."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode:
        raise SystemExit(f"git archive {rev}: {archive.stderr.decode().strip()}")
    tar_path = into / "src.tar"
    tar_path.write_bytes(archive.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    # beside the rev's C source, wherever that rev keeps it (the package root before the core/)
    (source,) = (into / "src" / "cryptoffload").rglob("_directpath.c")
    for built in (ROOT / "src" / "cryptoffload").rglob("_directpath*.so"):
        shutil.copy(built, source.parent / built.name)
    return into / "src"


def instructions(src: pathlib.Path, child: pathlib.Path, case: str, ops: int) -> tuple[int, str]:
    """Callgrind's total for one run of the child, and the twin it loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                str(child),
                case,
                str(ops),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode or found is None:
        raise SystemExit(f"the {case} child failed:\n{run.stderr[-2000:]}")
    return int(found.group(1)), run.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the git revision to compare with")
    parser.add_argument("--ops", type=positive, default=2000, help="N (the runs do N and 6N)")
    parser.add_argument("--only", type=cases, default=list(CASES), help="cases, comma-separated")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        child = work / "child.py"
        child.write_text(CHILD)
        sides = {args.against: other_tree(args.against, work), "this tree": ROOT / "src"}
        print(f"instructions per op, (6N - N) / 5N with N = {args.ops}")
        for case in args.only:
            per_op = {}
            twins = set()
            for side, src in sides.items():
                few, twin = instructions(src, child, case, args.ops)
                many, _ = instructions(src, child, case, 6 * args.ops)
                per_op[side] = (many - few) / (5 * args.ops)
                twins.add(twin)
            base, here = per_op[args.against], per_op["this tree"]
            print(
                f"{case:9} {args.against} {base:9.0f}  this tree {here:9.0f}  "
                f"ratio {here / base:.3f}  ({'/'.join(sorted(twins))})",
                flush=True,
            )


if __name__ == "__main__":
    main()
