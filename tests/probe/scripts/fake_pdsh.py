"""A stand-in for `pdsh` (DeepSpeed's default multi-node runner backend; no pdsh or sshd here).

`pdsh -S -f N -w host0,host1 CMD...` runs CMD on every host over ssh, `%n` replaced by the
host's index. Here every "host" is this machine, and CMD runs in a FRESH environment (PATH and
HOME only, plus DS_ACCELERATOR so DeepSpeed picks its CPU accelerator), as an ssh login would
give it: only what DeepSpeed's runner exports in CMD itself reaches the ranks.
"""

import os
import subprocess
import sys

KEPT = ("PATH", "HOME", "DS_ACCELERATOR")


def main() -> int:
    args = sys.argv[1:]
    hosts: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-w":
            hosts = args[i + 1].split(",")
        i += 2 if args[i] in ("-w", "-f") else 1
    command = " ".join(args[i:])
    env = {k: os.environ[k] for k in KEPT if k in os.environ}
    procs = [
        subprocess.Popen(["bash", "-c", command.replace("%n", str(n))], env=env) for n in range(len(hosts))
    ]
    return max(p.wait() for p in procs)


if __name__ == "__main__":
    sys.exit(main())
