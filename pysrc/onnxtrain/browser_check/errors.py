"""The one error of browser-check's setup: bad arguments, missing files, no Playwright or Chromium."""


class SetupError(Exception):
    """The check could not run (exit code 2); the message says what to change."""
