"""The intake mailbox's settings (from the environment, in settings.py); off when unset."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class MailboxConfig:
    host: str
    user: str
    password: str
    port: int = 993
    folder: str = "INBOX"
    tls: str = "ssl"  # ssl (IMAPS), starttls, or none (loopback and tests only)
    entered_by: str = ""  # username of the release-team member who owns the mailbox
    batch: int = 50  # messages read per poll at most
    timeout: float = 30.0

    @property
    def enabled(self) -> bool:
        return bool(self.host and self.user and self.password)

    @property
    def key(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.folder}"[:300]


def mailbox_config() -> MailboxConfig:
    return MailboxConfig(
        host=settings.INTAKE_IMAP_HOST,
        port=settings.INTAKE_IMAP_PORT,
        user=settings.INTAKE_IMAP_USER,
        password=settings.INTAKE_IMAP_PASSWORD,
        folder=settings.INTAKE_IMAP_FOLDER,
        tls=settings.INTAKE_IMAP_TLS,
        entered_by=settings.INTAKE_IMAP_ENTERED_BY,
        batch=settings.INTAKE_IMAP_BATCH,
        timeout=settings.INTAKE_IMAP_TIMEOUT,
    )
