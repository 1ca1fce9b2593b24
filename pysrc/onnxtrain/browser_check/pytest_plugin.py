"""The pytest plugin (entry point pytest11): the fixture ``onnxtrain_browser_check``, a function that runs
``onnxtrain.browser_check.check`` with the same arguments and fails the test with the report when the browser does
not match CPython or the check cannot run; it returns the Report."""
from __future__ import annotations

import pytest


@pytest.fixture
def onnxtrain_browser_check():
    from . import SetupError, check

    def run(artifacts, data, **options):
        try:
            report = check(artifacts, data, **options)
        except SetupError as e:
            pytest.fail(f"browser-check could not run: {e}", pytrace=False)
        if not report.ok:
            pytest.fail(report.summary(), pytrace=False)
        return report
    return run
