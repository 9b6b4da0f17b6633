#!/usr/bin/env python3
"""pdsh stand-in: run the remote command once per host of -w, locally, in a fresh environment
(as ssh gives a remote shell), %n replaced by the host's index."""

import os
import subprocess
import sys

args = sys.argv[1:]
hosts, rest, i = [], [], 0
while i < len(args):
    if args[i] == "-w":
        hosts = args[i + 1].split(",")
        i += 2
    elif args[i] in ("-f",):
        i += 2
    elif args[i] == "-S":
        i += 1
    else:
        rest = args[i:]
        break
cmd = " ".join(rest)
clean = {k: os.environ[k] for k in ("PATH", "HOME", "DS_ACCELERATOR") if k in os.environ}
procs = [subprocess.Popen(["bash", "-c", cmd.replace("%n", str(n))], env=clean) for n in range(len(hosts))]
sys.exit(max(p.wait() for p in procs))
