"""Adapters for other tools' result formats (one module per format)."""
