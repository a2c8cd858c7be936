"""trialhouse: the command line that wires runner → ingest → warehouse → analysis together."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # The version has one source, the package metadata (contract.files.engine_version);
    # read lazily so that importing the CLI does not import the event contract.
    if name == "__version__":
        from contract.files import engine_version

        return engine_version()
    raise AttributeError(name)
