"""The pytest plugin of `build.py test`: once the tests are collected, the site and the test site are built when
browser tests are among them (marked `browser`, or under tests/browser/), and the site alone when a test reads its
artifacts (marked `site`)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildsys.common import ROOT
from buildsys.site import build_site
from buildsys.testing import build_test_site

BROWSER_TESTS = ROOT / "tests" / "browser"


def in_browser(item: pytest.Item) -> bool:
    return item.get_closest_marker("browser") is not None or BROWSER_TESTS in Path(item.path).parents


def pytest_collection_finish(session: pytest.Session) -> None:
    browser = any(in_browser(item) for item in session.items)
    site = browser or any(item.get_closest_marker("site") is not None for item in session.items)
    if session.config.option.collectonly or not site:
        return
    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # the build's log as it goes
        try:
            built = build_site()
            if browser:
                build_test_site(built)
        except (SystemExit, subprocess.CalledProcessError) as e:
            pytest.exit(f"build.py test: building the site failed: {e}", returncode=1)
