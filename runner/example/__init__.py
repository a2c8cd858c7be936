"""The example corpus generator (`trialhouse example DIR`)."""

from runner.example.generator import CASES, REPOS, build_manifest, write_example

__all__ = ["CASES", "REPOS", "build_manifest", "write_example"]
