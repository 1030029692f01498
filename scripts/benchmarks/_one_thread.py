"""Imported by each benchmark before NumPy: one thread for BLAS, OpenMP and Numba, unless set.

Benchmarks report CPU time, which counts every thread of the process; OpenBLAS's idle threads spin
for a while after each matrix product, and the runs that the benchmarks stand for (``reproduce.sh``)
use one thread per process.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
