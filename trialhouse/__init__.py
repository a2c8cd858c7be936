"""trialhouse: the command line that wires runner → ingest → warehouse → analysis together."""

__version__ = "0.1.0"
