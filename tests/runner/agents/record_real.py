"""Re-record the real-CLI fixtures: ``python tests/runner/agents/record_real.py [kind ...]``.

Runs every rehearsal scenario (runner.agents.rehearse.SCENARIOS) of each harness found in
``tools/bin`` (``make tools``) against the scripted gateway and stores the real outputs in
``fixtures/real/<harness>-<version>/<scenario>/``. A version bump is therefore: change the pin
in the Makefile, ``make tools``, run this script, and look at what the parser tests say.
``--binary`` records another installed version (e.g. an older Claude Code).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from runner.agents.harness import DEFAULT_BINARY, HarnessSettings, parse_version, version_argv  # noqa: E402
from runner.agents.rehearse import SCENARIOS, rehearse, save_fixture  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "real"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", choices=[*SCENARIOS, []], help="default: all")
    parser.add_argument("--binary", help="record this binary instead of tools/bin/<cli> (one kind only)")
    parser.add_argument("--scenario", action="append", help="only these scenarios")
    args = parser.parse_args()
    for kind in args.kinds or list(SCENARIOS):
        binary = str(Path(args.binary).resolve()) if args.binary else str(ROOT / "tools" / "bin" / DEFAULT_BINARY[kind])
        argv = version_argv(HarnessSettings(kind=kind, model="m", binary=binary))
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        version = parse_version(kind, out.stdout + out.stderr)
        if version is None:
            print(f"{kind}: cannot read a version from {' '.join(argv)!r}: {out.stdout!r} {out.stderr!r}")
            return 1
        for scenario in args.scenario or SCENARIOS[kind]:
            if scenario not in SCENARIOS[kind]:
                continue
            with tempfile.TemporaryDirectory(prefix=f"record-{kind}-") as tmp:
                rehearsal = rehearse(kind, scenario, binary, root=Path(tmp), parse=False)
                dest = FIXTURES / f"{kind}-{version}" / scenario
                save_fixture(rehearsal, dest, version)
            print(f"{kind} {version} {scenario}: exit {rehearsal.exit_code}, {len(rehearsal.calls)} model calls, "
                  f"{rehearsal.duration_s:.1f} s, workspace fixed: {rehearsal.workspace_fixed} -> {dest.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
