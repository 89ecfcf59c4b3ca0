#!/usr/bin/env bash
# Benchmark T2: the harness is bench/gwbench/t2.py (its settings: `bench/run.py T2 --help-env`); this
# name stays for the commands that call it.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/run.py" T2 "$@"
