"""The contract between the runner and everything downstream: the event models, the value
rules, the hash chain, the trajectory step readers, file hashing and the redactor.

It imports nothing of ours (the standard library and declared libraries only), so the
runner, ingest and warehouse can all stand on it without standing on each other. Import
names from the module that owns them (``contract.events``, ``contract.values`` …).
"""
