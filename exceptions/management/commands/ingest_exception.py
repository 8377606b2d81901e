"""``manage.py ingest_exception FILE|-``: file an exception request from its thread.

The email, a pasted thread or a whole mbox file is read by ``exceptions.reader``
(``read_thread``) and filed by ``exceptions.services.exception_thread_file``: the request with
``exception_request_submit`` at the time the email was sent, each later change of the
days as a revision (``exception_request_amend``), the release team's decision as a
*proposed* decision that a release-team member confirms (never applied here). The
milestone and release are inferred when not given, and the reason printed. A text
that is not a request is refused with one sentence saying what it looks like.

Times: ``--received-at`` wins; else the ``Date:`` header of the message holding the
request; else now. An amendment is recorded at its own ``Date:`` header when the
thread has one after the request, else at the request's time (never earlier).
The request arrives now, when the command runs: one sent after its window closed is
recorded and flagged "filed after the window"; one sent more than 24 hours ago (or
arriving after its window) is from the archive, filed without the new-request mail and
without nudges (``exceptions.services.request_from_archive``).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import getpass
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config import env
from exceptions.reader import MAX_CHARS, read_thread
from exceptions.services import exception_thread_file
from releasecal import tz
from releasecal.errors import DomainError


def _read_input(source: str, stdin) -> str | bytes:
    """The raw input: bytes from a file (decoded by the reader), text or bytes from stdin."""
    if source == "-":
        stream = stdin or sys.stdin
        data = stream.buffer.read(MAX_CHARS * 4 + 1) if hasattr(stream, "buffer") else stream.read(MAX_CHARS + 1)
        return data
    path = Path(source)
    if not path.is_file():
        raise CommandError(f"No such file: {source}")
    size = path.stat().st_size
    if size > MAX_CHARS * 4:
        raise CommandError(f"{source} is {size / 1e6:.1f} MB; the reader takes at most {MAX_CHARS:,} characters.")
    return path.read_bytes()


def parse_received_at(value: str) -> dt.datetime:
    """ISO 8601 with an offset, or an RFC 2822 date as in an email ``Date:`` header."""
    text = value.strip()
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            parsed = None
        if parsed is None:
            raise CommandError(
                f"--received-at {value!r} is neither ISO 8601 (2024-07-24T03:00:00+02:00) "
                "nor an email date (Wed, 24 Jul 2024 03:00:00 +0200)."
            )
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise CommandError(f"--received-at {value!r} has no UTC offset; add one, e.g. '+00:00' or 'Z'.")
    try:
        return tz.check_plausible(parsed, field="--received-at")
    except tz.ImplausibleInstant as exc:
        raise CommandError(exc.message) from None


def _entered_by(username: str | None):
    """Who runs the command: --entered-by, else $RELEASECAL_USER, else the login name
    when a user of that name exists; None (reported) otherwise."""
    users = get_user_model().objects
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r} (--entered-by).")
        return user
    for candidate in (env.read("RELEASECAL_USER"), getpass.getuser()):
        if candidate:
            user = users.filter(username=candidate, is_active=True).first()
            if user is not None:
                return user
    return None


class Command(BaseCommand):
    help = "File an exception request from its email or thread (a file, an mbox file, or - for stdin)."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("file", help="The email, a pasted thread or an mbox file; - to read stdin.")
        parser.add_argument("--release", help="Release slug (default: inferred from the text or the date).")
        parser.add_argument(
            "--milestone", help="Milestone kind slug (code-freeze, ...) or id (default: inferred; the reason is shown)."
        )
        parser.add_argument(
            "--received-at",
            help="When the email was sent: ISO 8601 with offset or an RFC 2822 date "
            "(default: the email's Date: header, else now).",
        )
        parser.add_argument(
            "--requester",
            help="Username of the requester (default: the user with the sender's email address, else the From: name).",
        )
        parser.add_argument(
            "--entered-by",
            help="Username of the release-team member entering it (default: $RELEASECAL_USER or the login name "
            "when such a user exists).",
        )
        parser.add_argument("--create-kep", action="store_true", help="Create the KEP when it is not known yet.")
        parser.add_argument(
            "--allow-missing",
            action="store_true",
            help="File even when some template fields could not be read (the days and KEP are still required).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Show what would be created; save nothing.")

    def handle(self, *args, **options):
        raw = _read_input(options["file"], options.get("stdin"))
        received_at = parse_received_at(options["received_at"]) if options["received_at"] else None
        requester = None
        if options["requester"]:
            requester = get_user_model().objects.filter(username=options["requester"]).first()
            if requester is None:
                raise CommandError(f"No user {options['requester']!r} (--requester).")
        entered_by = _entered_by(options["entered_by"])
        try:
            reading = read_thread(raw, received_at=received_at)
            filed = exception_thread_file(
                reading=reading,
                release=options["release"],
                milestone=options["milestone"],
                received_at=received_at,
                entered_by=entered_by,
                requester=requester,
                create_kep=options["create_kep"],
                allow_missing=options["allow_missing"],
                dry_run=options["dry_run"],
            )
        except DomainError as exc:
            hint = ""
            if received_at is None and "window" in exc.message and "--received-at" not in exc.message:
                hint = " (The time came from the email's Date: header; pass --received-at to override it.)"
            raise CommandError(exc.message + hint) from None
        for line in filed.report:
            self.stdout.write(line)
