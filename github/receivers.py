"""What the GitHub integration does on each event of the domain (exceptions/signals.py,
releasecal/signals.py): in read-write mode, one board write in the ledger (each write
sends the whole of releasecal's record of the request that differs from the board); and
the KEP issue's comment (listed or posted, per release), each in the change's transaction."""

from __future__ import annotations

from github.comments import (
    comment_for_decision,
    comment_for_reevaluation,
    comment_for_tracking,
    comments_for_correction,
)
from github.writes import board_write_record


def exception_request_submitted(sender, *, request, **kwargs) -> None:
    board_write_record(request=request, event="submitted")


def exception_request_amended(sender, *, request, **kwargs) -> None:
    board_write_record(request=request, event=f"amended:{request.current.number}")


def exception_request_decided(sender, *, request, decision, **kwargs) -> None:
    board_write_record(request=request, event="decided")
    comment_for_decision(request=request, decision=decision)


def exception_decision_corrected(sender, *, request, correction, old=None, new=None, reason="", **kwargs) -> None:
    # The send writes the decision in force (a reopen: the request back to pending).
    board_write_record(request=request, event=f"corrected:{correction.number}")
    if old is not None:  # the signal always gives the decision before; a replayed write may not
        comments_for_correction(request=request, correction=correction, old=old, new=new, reason=reason)


def exception_request_liaison_changed(sender, *, request, change, **kwargs) -> None:
    board_write_record(request=request, event=f"liaison:{change}")


def exception_request_slack_thread_linked(sender, *, request, **kwargs) -> None:
    board_write_record(request=request, event="slack-thread")


def exception_grant_reevaluated(sender, *, request, grant_end, **kwargs) -> None:
    board_write_record(request=request, event="reevaluated")
    comment_for_reevaluation(request=request, grant_end=grant_end)


def tracking_status_changed(sender, *, tracking, previous, change_id, **kwargs) -> None:
    comment_for_tracking(tracking=tracking, previous=previous, change_id=change_id)
