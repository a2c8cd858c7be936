"""Supplementary model judgments (docs/judges.md): configured per variant, run after the
deterministic grading on a read-only copy of bounded evidence, through a model gateway,
inside the sandbox. A judgment is advisory data: it never changes a trial's outcome."""
