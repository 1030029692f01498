"""Overhead per job of three engines on the same small plan: N empty jobs on 2 workers.

    .venv/bin/python scripts/benchmarks/bench_engines.py --jobs 200

Dask (a LocalCluster of single-threaded worker processes, as experiments.plan.engine runs it),
joblib/loky (the process pool of the Hydra joblib launcher) and submitit's LocalExecutor (a process
per job, as on a cluster); wall seconds per job after each engine has started, and its start-up.
"""

import argparse
import time


def noop(i):
    return i


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--submitit-jobs", type=int, default=10)
    args = p.parse_args()
    n = args.jobs

    t0 = time.perf_counter()
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            client.submit(noop, -1).result()
            t1 = time.perf_counter()
            futures = [client.submit(noop, i, pure=False) for i in range(n)]
            client.gather(futures)
            t2 = time.perf_counter()
    print(f"dask: start {t1 - t0:.2f} s, {1000 * (t2 - t1) / n:.2f} ms per job")

    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    with Parallel(n_jobs=2, backend="loky", batch_size=1) as par:
        par(delayed(noop)(i) for i in range(2))
        t1 = time.perf_counter()
        par(delayed(noop)(i) for i in range(n))
        t2 = time.perf_counter()
    print(f"joblib/loky: start {t1 - t0:.2f} s, {1000 * (t2 - t1) / n:.2f} ms per job")

    import tempfile

    import submitit

    with tempfile.TemporaryDirectory() as d:
        ex = submitit.LocalExecutor(folder=d)
        ex.update_parameters(timeout_min=5)
        t1 = time.perf_counter()
        jobs = [ex.submit(noop, i) for i in range(args.submitit_jobs)]
        [j.result() for j in jobs]
        t2 = time.perf_counter()
    print(
        f"submitit/local: {1000 * (t2 - t1) / args.submitit_jobs:.0f} ms per job (a process each)"
    )


if __name__ == "__main__":
    main()
