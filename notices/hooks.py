"""Notices follow the schedule: registered with the services that move deadlines.

Both hooks run inside the saving transaction: the notice and its delivery rows commit
with the change (or roll back with it); the send task is queued on commit.
"""

from __future__ import annotations

from notices.services import notice_for_hard_stop_change, notice_for_milestone_change
from releasecal.services import milestone_moved_hooks, release_hard_stop_hooks


def on_milestone_moved(old, milestone) -> None:
    notice_for_milestone_change(old=old, milestone=milestone)


def on_hard_stop_moved(release, before) -> None:
    notice_for_hard_stop_change(release=release, before=before)


def register() -> None:
    if on_milestone_moved not in milestone_moved_hooks:
        milestone_moved_hooks.append(on_milestone_moved)
    if on_hard_stop_moved not in release_hard_stop_hooks:
        release_hard_stop_hooks.append(on_hard_stop_moved)
