"""The pytest plugin of `build.py test`: the site and the test site are built once the tests are collected, and
only when browser tests are among them (marked `browser`, or under tests/browser/)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildsys.common import ROOT
from buildsys.site import build_site
from buildsys.testing import build_test_site

BROWSER_TESTS = ROOT / "tests" / "browser"


def needs_site(item: pytest.Item) -> bool:
    return item.get_closest_marker("browser") is not None or BROWSER_TESTS in Path(item.path).parents


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or not any(needs_site(item) for item in session.items):
        return
    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # the build's log as it goes
        try:
            build_test_site(build_site())
        except (SystemExit, subprocess.CalledProcessError) as e:
            pytest.exit(f"build.py test: building the site failed: {e}", returncode=1)
