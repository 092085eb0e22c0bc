"""Running things against trees: tests and benchmarks."""
