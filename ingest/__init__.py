"""Ingest: our events and other tools' results → validated, normalised warehouse batches."""
