"""A small task for the sweep tests (no torch): prints intermediate values and a result like a
training script, or works a shard of a queue, dying by SIGKILL on its first runs when told."""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--x", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.2)
    parser.add_argument("--shard", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--die-shard", default=None)
    parser.add_argument("--die-times", type=int, default=0)
    args = parser.parse_args()
    if args.shard is not None:
        assert args.out is not None
        runs = args.out / f"runs-{args.shard}"
        runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
        time.sleep(args.sleep)
        if args.shard == args.die_shard and int(runs.read_text()) <= args.die_times:
            os.kill(os.getpid(), signal.SIGKILL)  # an OOM kill, say: no notice, no exit code
        partial = args.out / f".shard-{args.shard}.tmp"
        partial.write_text(f"shard {args.shard} done\n")
        os.replace(partial, args.out / f"shard-{args.shard}.txt")  # written whole, once
        with open(args.out / "writes.log", "a") as log:
            log.write(f"{args.shard}\n")
        return
    for step in range(1, args.steps + 1):
        time.sleep(args.sleep)
        print(json.dumps({"event": "report", "step": step, "value": args.x}), flush=True)
    print(json.dumps({"event": "result", "value": args.x}), flush=True)


if __name__ == "__main__":
    main()
