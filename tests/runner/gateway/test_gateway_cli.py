"""``python -m runner.gateway``: bad input is one clear message and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def gateway(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner.gateway", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_bad_script_names_the_file_and_the_field(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("steps:\n  - text: a\n  - text: b\n")
    proc = gateway("--mode", "scripted", "--script", str(script))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{script}: not a gateway script" in proc.stderr and "only the last step" in proc.stderr


def test_replay_without_recordings_is_refused(tmp_path):
    proc = gateway("--mode", "replay")
    assert proc.returncode == 1 and "needs recording_dir" in proc.stderr and "Traceback" not in proc.stderr
    proc = gateway("--mode", "replay", "--recording-dir", str(tmp_path), "--trial", "t1")
    assert proc.returncode == 1 and "no recording for this trial" in proc.stderr
