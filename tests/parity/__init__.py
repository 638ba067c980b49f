"""The parity suite: one plan, every engine, one fixture corpus."""
