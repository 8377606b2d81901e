"""Reads for the admin and check_services."""

from __future__ import annotations

from intake.conf import mailbox_config
from intake.models import IntakeProblem, MailboxState


def mailbox_status() -> str:
    """One line: off, ok (with what it read), or the last error. Never raises for the mailbox."""
    config = mailbox_config()
    if not config.enabled:
        return "off"
    state = MailboxState.objects.filter(mailbox=config.key).first()
    if state is None or state.last_poll_at is None:
        return "not polled yet"
    open_problems = IntakeProblem.objects.filter(mailbox=state, resolved_at__isnull=True).count()
    problems = f", {open_problems} intake problem{'s' if open_problems != 1 else ''} open" if open_problems else ""
    if state.last_error:
        return f"failing ({state.failures} polls in a row): {state.last_error}{problems}"
    return f"ok (last UID {state.last_uid}, {state.messages_read} messages read{problems})"
