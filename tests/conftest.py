"""Settings every test shares."""

from __future__ import annotations

import os
import tempfile

# The chain key lives in the user's trialhouse config folder (contract.chain.config_dir):
# tests keep theirs in a temporary folder of the session, never in the real one.
os.environ["TRIALHOUSE_CONFIG_DIR"] = tempfile.mkdtemp(prefix="trialhouse-config-")
