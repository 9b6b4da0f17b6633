"""Records every signal it receives (one line each in SIGNALS_OUT), then exits with 40 + the
number of the first ending signal (INT, TERM, HUP, QUIT), LINGER seconds after it. No torch."""

import os
import signal
import sys
import time

OUT = os.environ["SIGNALS_OUT"]
LINGER = float(os.environ.get("LINGER", "0.5"))  # long enough to see a duplicate arrive
got: list[int] = []


def handler(signum, frame):
    got.append(signum)
    with open(OUT, "a") as f:
        f.write(signal.Signals(signum).name + "\n")


for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
    signal.signal(sig, handler)
with open(OUT + ".ready", "w") as f:
    f.write(str(os.getpid()))
ending = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
deadline = time.monotonic() + 60
while not any(s in ending for s in got) and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(LINGER)
first = next((s for s in got if s in ending), None)
sys.exit(40 + first if first else 1)
