#!/usr/bin/env bash
# Benchmark T1: the harness is bench/gwbench/t1.py (its settings: `bench/run.py T1 --help-env`); this
# name stays for the commands that call it.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/run.py" T1 "$@"
