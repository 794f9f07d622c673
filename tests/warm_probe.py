"""A stand-in demo for tests/test_warm_worker.py, run by the warm process as a demo module is:
`main(argv)` in a forked child. argv[0] says what to show."""

from __future__ import annotations

import json
import os
import sys
import time


def main(argv: list[str]) -> int:
    what = argv[0]
    if what == "self":
        import resource

        print(
            json.dumps(
                {
                    "torch_before": "torch" in sys.modules,
                    "pid": os.getpid(),
                    "ppid": os.getppid(),
                    "sid": os.getsid(0),
                    "limit": resource.getrlimit(resource.RLIMIT_AS)[0],
                    "env": os.environ.get("WARM_PROBE"),
                    "cwd": os.getcwd(),
                    "argv": argv,
                }
            ),
            flush=True,
        )
        print("to stderr", file=sys.stderr)
        return int(argv[1]) if len(argv) > 1 else 0
    if what == "grandchild":  # a process the demo starts, keeping every descriptor it may
        import subprocess

        child = subprocess.Popen(["sleep", "30"], close_fds=False)
        print(child.pid, flush=True)
        return 0
    if what == "hog":
        bytearray(8 << 30)
    if what == "sleep":
        print("started", flush=True)
        time.sleep(600)
    if what == "crash":
        raise RuntimeError("the probe failed on purpose")
    return 0
