"""Benchmarks: each `bench_*.py` has a `main()` that prints figures and ratios against a
baseline measured in the same run (absolute times mean little on noisy machines)."""
