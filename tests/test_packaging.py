"""A quiet, truthful install (issue 31, item 8): every data directory is a declared package
and every data file is declared package data, so setuptools prints no "Package would be
ignored" warning (it printed one per data directory, 15 of them, ~400 lines) and the wheel
carries every template, SQL file, schema and corpus file the code reads."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _tops(cfg: dict) -> list[str]:
    return [p.rstrip("*") for p in cfg["packages"]["find"]["include"]]


def _files(cfg: dict) -> list[Path]:
    """Every file under the packages' directories but compiled Python."""
    out = []
    for top in _tops(cfg):
        out += [p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts
                and p.suffix != ".pyc"]
    return out


def test_every_importable_data_directory_is_a_declared_package() -> None:
    """setuptools warns for a directory Python could import that ``packages`` lacks."""
    from setuptools import find_namespace_packages

    cfg = _config()
    assert cfg["packages"]["find"].get("namespaces") is True
    declared = set(find_namespace_packages(where=str(ROOT), include=cfg["packages"]["find"]["include"]))
    missing = set()
    for f in _files(cfg):
        parts = f.parent.relative_to(ROOT).parts
        if all(p.isidentifier() for p in parts):
            name = ".".join(parts)
            if name not in declared:
                missing.add(name)
    assert not missing, f"importable directories setuptools would warn about: {sorted(missing)}"


def test_every_data_file_is_declared_package_data() -> None:
    """Each file that is not a Python module is matched by a package-data pattern, so the
    wheel carries it (templates, SQL, schemas, the example corpus, agent notes)."""
    cfg = _config()
    matched: set[Path] = set()
    for package, patterns in cfg["package-data"].items():
        base = ROOT.joinpath(*package.split("."))
        for pattern in patterns:
            matched |= {p for p in base.glob(pattern) if p.is_file()}
    data = [f for f in _files(cfg) if f.suffix != ".py"]
    assert data, "no data files found: the walk is wrong"
    undeclared = sorted(str(f.relative_to(ROOT)) for f in data if f not in matched)
    assert not undeclared, f"data files the wheel would leave out: {undeclared}"


@pytest.mark.slow
def test_building_the_wheel_prints_no_setuptools_warning(tmp_path: Path) -> None:
    """The build ``make venv`` runs, counted: ``pip wheel --quiet`` over the tracked files
    prints nothing (before: 615 lines, 15 "absent from the `packages` configuration"
    warnings), and the wheel carries each data file the code reads."""
    src = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           "--wheel-dir", str(tmp_path / "wheel"), str(src)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode and "No matching distribution" in done.stdout + done.stderr:
        pytest.skip("pip cannot fetch the build requirements (setuptools>=77) here")
    assert done.returncode == 0, done.stderr[-2000:]
    printed = (done.stdout + done.stderr).strip()
    assert "Warning" not in printed and "would be ignored" not in printed, printed[:2000]
    wheel = next((tmp_path / "wheel").glob("trialhouse-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ["analysis/report/templates", "warehouse/sql", "contract/schemas",
                 "runner/example/corpus", "viewer/templates"]:
        assert any(n.startswith(data + "/") for n in names), f"the wheel lacks {data}/"
