"""Benchmark: why `scripts/reproduce.sh` pins every process to one BLAS thread.

  .venv/bin/python scripts/benchmarks/bench_blas_threads.py [--seconds 10] [--repeats 3] [--d 512] [--workers 2]

The paper-scale run keeps both cores busy with single-threaded chain workers while other processes
call LAPACK (each PPCA group and each MOD-SULQ release eigendecomposes a d x d matrix).  With its
default settings OpenBLAS starts one thread per core and lets them spin between calls, so a process
doing eigh competes with the busy workers for more cores than exist.  This script measures that in
one run, as ratios, on the machine it runs on:

  * ``workers``: ``--workers`` processes each run a CPU-bound loop that calls no BLAS (elementwise
    NumPy work, like the Numba chain kernels); their throughput is counted;
  * ``eigh``: one process eigendecomposes a random symmetric d x d matrix in a loop, counted;
  * both run for ``--seconds`` at the same time, once with the BLAS thread variables unset (OpenBLAS's
    default) and once with ``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1``, interleaved
    ``--repeats`` times.

Printed: the eigh rate and the workers' total rate in each setting (medians over the repeats) and
the ratios one-thread / default.  The last line is one JSON object.  The machine is shared: read the
ratios, not the rates.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

_WORKER = """
import sys, time
import numpy as np
seconds = float(sys.argv[1]); start_at = float(sys.argv[2])
x = np.random.default_rng(0).random(20_000)
while time.time() < start_at:
    time.sleep(0.001)
count, end = 0, start_at + seconds
while time.time() < end:
    for _ in range(50):
        x = np.sqrt(x * x + 1.0) - 0.999
    count += 1
print(count)
"""

_EIGH = """
import sys, time
import numpy as np
seconds = float(sys.argv[1]); start_at = float(sys.argv[2]); d = int(sys.argv[3])
g = np.random.default_rng(1).standard_normal((d, d))
a = g + g.T
np.linalg.eigh(a)  # load the library and start its threads before the clock
while time.time() < start_at:
    time.sleep(0.001)
count, end = 0, start_at + seconds
while time.time() < end:
    np.linalg.eigh(a)
    count += 1
print(count)
"""


def _environment(one_thread: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
    if one_thread:
        env.update({k: "1" for k in _THREAD_VARS})
    return env


def measure(one_thread: bool, seconds: float, d: int, workers: int) -> tuple[float, float]:
    """One trial: (eigh calls per second, worker loops per second summed over the workers)."""
    env = _environment(one_thread)
    start_at = (
        time.time() + 3.0
    )  # every process imported NumPy and is waiting when the clock starts
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(seconds), str(start_at)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    procs.append(
        subprocess.Popen(
            [sys.executable, "-c", _EIGH, str(seconds), str(start_at), str(d)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
    )
    counts = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"benchmark child failed with status {p.returncode}")
        counts.append(int(out.strip()))
    return counts[-1] / seconds, sum(counts[:-1]) / seconds


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    rates = {False: [], True: []}
    for _ in range(args.repeats):
        for one_thread in (False, True):
            rates[one_thread].append(measure(one_thread, args.seconds, args.d, args.workers))
    med = {
        k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
        for k, v in rates.items()
    }
    for one_thread, label in ((False, "BLAS default threads"), (True, "one BLAS thread")):
        print(
            f"{label:22s} eigh {med[one_thread][0]:8.2f}/s   workers {med[one_thread][1]:8.2f} loops/s"
        )
    result = {
        "cores": os.cpu_count(),
        "d": args.d,
        "workers": args.workers,
        "seconds": args.seconds,
        "repeats": args.repeats,
        "eigh_per_s": {"default": med[False][0], "one_thread": med[True][0]},
        "worker_loops_per_s": {"default": med[False][1], "one_thread": med[True][1]},
        "eigh_ratio_one_thread_over_default": med[True][0] / med[False][0],
        "worker_ratio_one_thread_over_default": med[True][1] / med[False][1],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
