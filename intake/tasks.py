"""The beat task that polls the intake mailbox (every INTAKE_IMAP_POLL_SECONDS)."""

from __future__ import annotations

from celery import shared_task

from intake.services import mailbox_poll


@shared_task(name="intake.poll_mailbox", ignore_result=True)
def poll_mailbox() -> dict:
    """One poll. Mailbox trouble is recorded on MailboxState, never raised: a wrong
    password must not fill the worker's log with tracebacks or fail its health check."""
    result = mailbox_poll()
    if result.off:
        return {"off": True}
    return {"read": result.read, "problems": result.problems, "error": result.error}
