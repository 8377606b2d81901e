"""Notices follow the schedule and announce approvals: receivers of
``releasecal/signals.py`` and ``exceptions/signals.py``, connected in
``NoticesConfig.ready()``.

Both run inside the saving transaction: the notice and its delivery rows commit with the
change (or roll back with it); the send task is queued on commit.
"""

from __future__ import annotations

from notices.services import (
    notice_for_approval,
    notice_for_decision_correction,
    notice_for_hard_stop_change,
    notice_for_milestone_change,
)


def milestone_moved(sender, *, milestone, previous, **kwargs) -> None:
    notice_for_milestone_change(old=previous, milestone=milestone)


def release_hard_stop_moved(sender, *, release, previous, **kwargs) -> None:
    notice_for_hard_stop_change(release=release, before=previous)


def exception_request_decided(sender, *, request, decision, **kwargs) -> None:
    notice_for_approval(request=request, decision=decision)


def exception_decision_corrected(sender, *, request, correction, **kwargs) -> None:
    notice_for_decision_correction(request=request, correction=correction)
