"""The time by stage of a ``scripts/reproduce.sh`` run, from its results store alone.

  .venv/bin/python scripts/benchmarks/run_stages.py STORE [--scale paper]

The run's start is its end minus its wall time (``STORE/wall_time_<scale>.txt``, written by
``reproduce.sh``); each stage (experiment, data set, mechanism) is shown from its first to its last
record written (the records' file times), in minutes from the start, with its record count.  A
stage's first record is written when its first job finishes, so "from" is the end of that job, not
the stage's start.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

_WALL = re.compile(r"finished in (\d+) s .* (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


def run_window(store: Path, scale: str) -> tuple[float, float]:
    """(start, end) of the run as POSIX times, from ``wall_time_<scale>.txt``."""
    path = store / f"wall_time_{scale}.txt"
    match = _WALL.search(path.read_text()) if path.exists() else None
    if match is None:
        raise SystemExit(
            f"run_stages: no finished run in {path} (reproduce.sh writes it at the end)"
        )
    stamp = datetime.strptime(match.group(2), "%Y-%m-%dT%H:%M:%SZ")
    end = stamp.replace(tzinfo=timezone.utc).timestamp()
    return end - int(match.group(1)), end


def stage_of(record: dict) -> str:
    """The stage a record belongs to: its experiment, data set and mechanism (and Figure 2's sampler,
    Table 2's classifier when not the default)."""
    parts = [record.get("experiment", "?"), record.get("dataset", ""), record.get("mechanism", "")]
    sampler = record.get("sampler")
    if record.get("experiment") == "gibbs_convergence" and sampler:
        parts.append(str(sampler))
    return " ".join(p for p in parts if p)


def stages(store: Path, start: float) -> pd.DataFrame:
    """One row per stage: first and last record written, minutes from ``start``, and the count."""
    rows = []
    for path in (store / "records").glob("*.json"):
        record = json.loads(path.read_text())
        rows.append({"stage": stage_of(record), "minute": (path.stat().st_mtime - start) / 60.0})
    table = pd.DataFrame(rows).groupby("stage")["minute"].agg(["min", "max", "count"])
    table.columns = ["from", "to", "records"]
    return table.sort_values("from").round(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--scale", default="paper")
    args = parser.parse_args(argv)
    start, end = run_window(args.store, args.scale)
    print(f"# wall time {end - start:.0f} s ({(end - start) / 60:.1f} min)")
    print(stages(args.store, start).to_string())


if __name__ == "__main__":
    main()
