"""Start N copies of one command, as N single-process "nodes" of a multi-node job would be, and exit
with the worst exit code. For scripts that launch their own ranks (torch.multiprocessing.spawn with
one process per device): on a CPU machine each copy spawns one rank, so N copies give N ranks.

    python nodes.py N -- python main.py --rank {node} --world-size N ...

`{node}` in an argument is replaced by the copy's index (0..N-1). Only the standard library: this
process is a launcher, not a rank.
"""

from __future__ import annotations

import subprocess
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write(__doc__ or "")
        return 2
    n = int(argv[0])
    cmd = argv[2:]
    procs = [subprocess.Popen([a.replace("{node}", str(i)) for a in cmd]) for i in range(n)]
    codes = [p.wait() for p in procs]
    return max(codes, key=lambda c: (c != 0, abs(c)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
