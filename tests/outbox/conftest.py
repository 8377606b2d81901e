"""The outbox's tests: the board's fixtures too (``tests.support.github_board``), for the
board writes' case of the rules."""

from tests.support.github_board import board, enhancements, github, github_settings, project  # noqa: F401
