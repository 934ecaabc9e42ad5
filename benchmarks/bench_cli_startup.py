"""Start-up time of the command line: `agentgym --help` against `python -c pass` and the import set
the command line used to load for `--help` (every command module: retriever, HTTP client, demo, ...).

    python benchmarks/bench_cli_startup.py [--repeat 15]

Each figure is the median wall time of a fresh interpreter over --repeat runs, all in this one run.
Goal: `agentgym --help` within 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# What `agentgym --help` imported before the commands were loaded lazily.
# (The same command modules, at their present place under agentgym.cli.)
OLD_IMPORTS = ("agentgym.cli.serve_retriever", "agentgym.cli.demo", "agentgym.cli.eval", "agentgym.cli.travelplanner",
               "agentgym.cli.serve", "agentgym.cli.list", "agentgym.cli.run", "agentgym.cli.verl")

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "agentgym --help": [sys.executable, "-m", "agentgym.cli", "--help"],
    "agentgym --version": [sys.executable, "-m", "agentgym.cli", "--version"],
    "old --help import set": [sys.executable, "-c", f"import {', '.join(OLD_IMPORTS)}"],
}


def median_s(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    median_s(CASES["agentgym --help"], 2)  # warm the file cache and bytecode
    figures = {name: median_s(argv, args.repeat) for name, argv in CASES.items()}
    ours, old = figures["agentgym --help"], figures["old --help import set"]
    print("| case | median wall time |")
    print("|---|---|")
    for name, seconds in figures.items():
        print(f"| {name} | {seconds:.3f} s |")
    print(f"\n`agentgym --help` {ours:.3f} s vs the old import set {old:.3f} s: {old / ours:.1f}x faster; "
          f"goal <= 0.3 s: {'met' if ours <= 0.3 else 'NOT met'}")


if __name__ == "__main__":
    main()
