"""Email, the transport every ledger shares: Django's email backend (``EMAIL_URL``),
its failures told as the outbox's :class:`~outbox.errors.TransportError`."""

from __future__ import annotations

import smtplib

from django.core.mail import EmailMessage

from outbox.errors import TransportError


def send_email(*, subject: str, body: str, address: str) -> None:
    """One plain-text message to one address. A refused address is permanent (that
    message fails); failed authentication disables the channel (every message would
    fail); anything else SMTP or the network says is transient."""
    try:
        EmailMessage(subject=subject, body=body, to=[address]).send()
    except smtplib.SMTPRecipientsRefused as exc:
        raise TransportError(f"Address refused: {address}", permanent=True) from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise TransportError("SMTP authentication failed", permanent=True, disable_channel=True) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise TransportError(f"SMTP error: {exc.__class__.__name__}: {exc}") from exc
