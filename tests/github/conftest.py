"""The board's tests: the fixtures of ``tests.support.github_board`` (a fake GitHub of
their own, a 1.31 board on it, the settings pointing releasecal's client at it)."""

from tests.support.github_board import board, enhancements, github, github_settings, project  # noqa: F401
