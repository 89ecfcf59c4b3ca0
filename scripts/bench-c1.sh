#!/usr/bin/env bash
# Benchmark C1: the harness is bench/gwbench/c1.py (its settings: `bench/run.py C1 --help-env`); this
# name stays for the commands that call it.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/run.py" C1 "$@"
