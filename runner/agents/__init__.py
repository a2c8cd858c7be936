"""Agents: built-in (null, reference, replay, simulated) and command agents with usage parsers."""
