"""The benchmark harness behind bench/run.py (docs/benchmarks.md): one module per benchmark that launches
its runs (t1, t2, t4, t5, c1) or reads them (validation), and builds its table from an output directory;
harness.py is what they share."""
