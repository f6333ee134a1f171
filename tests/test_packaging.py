"""Every package folder of the plugin is in pyproject's package list: an editable install finds a
folder by its path, but a wheel holds only the packages listed, so a folder left out works in the
clone and is missing from every install of the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_for_the_wheel():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    ((name, folder),) = setuptools["package-dir"].items()
    base = ROOT / folder
    found = {".".join([name, *init.parent.relative_to(base).parts]) for init in base.rglob("__init__.py")}
    assert found - set(setuptools["packages"]) == set(), "add these to [tool.setuptools] packages"
    assert set(setuptools["packages"]) - found == set(), "these listed packages have no folder"
