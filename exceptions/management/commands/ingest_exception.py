"""``manage.py ingest_exception FILE|-``: file an exception request from its email.

The email (or a pasted thread) is read by ``exceptions.parsing``; the request is filed
with ``exception_request_submit`` at the time the email was sent, and each later change
of the days in the thread is recorded with ``exception_request_amend``.

Times: ``--received-at`` wins; else the ``Date:`` header of the message holding the
request; else now. An amendment is recorded at its own ``Date:`` header when the
thread has one after the request, else at the request's time (never earlier).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from exceptions.parsing import FIELD_LABELS, ParsedRequest, parse_request_email, seasonal_abbreviation
from exceptions.selectors import exception_milestone_get
from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_submit,
    request_window_closes,
)
from releasecal import tz
from releasecal.errors import DomainError
from releasecal.models import Enhancement, Milestone, MilestoneKind
from releasecal.selectors import release_get, release_list_active
from releasecal.services import enhancement_upsert


class _DryRun(Exception):
    pass


def _read_text(source: str, stdin) -> str:
    if source == "-":
        data = (stdin or sys.stdin).read()
        return data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
    path = Path(source)
    if not path.is_file():
        raise CommandError(f"No such file: {source}")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


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


def _describe(milestone: Milestone) -> str:
    return f"{milestone.title} of {milestone.release.slug} (#{milestone.pk})"


def _release(slug: str):
    try:
        return release_get(slug=slug)
    except DomainError as exc:
        raise CommandError(exc.message) from None


def _named_milestone(**named) -> Milestone:
    try:
        return exception_milestone_get(**named)
    except DomainError as exc:
        raise CommandError(exc.message) from None


def resolve_milestone(
    *,
    parsed: ParsedRequest,
    release_slug: str | None,
    milestone_opt: str | None,
    received_at: dt.datetime,
    notes: list[str],
) -> Milestone:
    """The milestone the request extends, from the options and what the email says.

    When the email names no freeze, the one freeze whose request window was open when
    the email was sent (freeze <= sent <= window end) is taken, and a note says so.
    """
    qs = Milestone.objects.select_related("release", "kind")
    if milestone_opt and milestone_opt.strip().isdigit():
        return _named_milestone(milestone_id=int(milestone_opt), release_slug=release_slug)

    kind = (milestone_opt or parsed.milestone_kind or "").strip()
    if not kind:
        scope = qs.filter(kind__allows_exceptions=True, cancelled=False)
        if release_slug:
            scope = scope.filter(release=_release(release_slug))
        else:
            scope = scope.filter(release__in=release_list_active())
        open_windows = [m for m in scope if m.deadline <= received_at <= request_window_closes(m)]
        if len(open_windows) == 1:
            milestone = open_windows[0]
            notes.append(
                f"The email names no freeze; took {_describe(milestone)}, whose request window was open "
                f"when it was sent."
            )
            return milestone
        raise CommandError(
            "Could not tell which freeze the request is for (neither the subject nor the text names one, "
            f"and {len(open_windows)} freezes had an open request window at that time); "
            "pass --milestone code-freeze (or another kind slug, or a milestone id)."
        )
    if not MilestoneKind.objects.filter(slug=kind).exists():
        slugs = ", ".join(MilestoneKind.objects.values_list("slug", flat=True))
        raise CommandError(f"Unknown milestone kind {kind!r}; use one of: {slugs}, or a milestone id.")

    if release_slug:
        return _named_milestone(release_slug=release_slug, kind=kind)

    candidates = list(qs.filter(release__in=release_list_active(), kind__slug=kind, cancelled=False))
    if not candidates:
        raise CommandError(f"No active release has a {kind} milestone; pass --release SLUG.")
    if len(candidates) > 1:
        # Prefer the one freeze whose request window is still open at the time received.
        open_now = [m for m in candidates if request_window_closes(m) >= received_at]
        if len(open_now) == 1:
            return open_now[0]
        listed = "; ".join(_describe(m) for m in candidates)
        raise CommandError(f"Several active releases have a {kind} milestone ({listed}); pass --release SLUG.")
    return candidates[0]


def _enhancement(parsed: ParsedRequest, create: bool) -> Enhancement:
    number = parsed.kep_number
    enhancement = Enhancement.objects.filter(number=number).first()
    if enhancement is not None:
        return enhancement
    if not create:
        raise CommandError(
            f"KEP-{number} is not known; import it first (import_keps) "
            "or pass --create-kep to create it from the email."
        )
    if not parsed.fields.sig:
        raise CommandError(f"--create-kep needs the SIG of KEP-{number}, but the 'SIG:' field could not be read.")
    return enhancement_upsert(
        number=number,
        title=parsed.fields.enhancement_name or f"KEP-{number}",
        owning_sig=parsed.fields.sig,
        issue_url=parsed.fields.issue_url,
    )


def _label_checks(parsed: ParsedRequest, received_at: dt.datetime) -> list[str]:
    """Warn when an "until" names the wrong half of a DST pair for when it was sent ("PST" in July)."""
    notes = []
    checks = [(parsed.fields.until_text, parsed.fields.until_zone)]
    checks += [(a.until_text, a.until_zone or parsed.fields.until_zone) for a in parsed.amendments]
    for until_text, zone in checks:
        written = seasonal_abbreviation(until_text)
        if not written or not zone:
            continue
        in_force = tz.abbreviation(received_at, zone)
        if in_force != written:
            notes.append(
                f"'until {until_text}' says {written}, but {in_force} is in force in {zone} at "
                f"{tz.render(received_at, zone)}; read as local time in {zone}."
            )
    return notes


def _field_error(parsed: ParsedRequest, names: list[str]) -> str:
    parts = []
    for name in names:
        label = FIELD_LABELS.get(name, "KEP number")
        parts.append(f"'{label}' ({parsed.problems.get(name, 'not read')})")
    noun = "field" if len(parts) == 1 else "fields"
    return f"Could not read the {noun} " + "; ".join(parts) + "."


class Command(BaseCommand):
    help = "File an exception request from its email text (a file, or - for stdin)."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("file", help="The email as text, or - to read stdin.")
        parser.add_argument("--release", help="Release slug (default: the active release with that freeze).")
        parser.add_argument("--milestone", help="Milestone kind slug (code-freeze, ...) or milestone id.")
        parser.add_argument(
            "--received-at",
            help="When the email was sent: ISO 8601 with offset or an RFC 2822 date "
            "(default: the email's Date: header, else now).",
        )
        parser.add_argument("--requester", help="Username of the requester (default: the From: name, or 'email').")
        parser.add_argument("--create-kep", action="store_true", help="Create the KEP when it is not known yet.")
        parser.add_argument(
            "--allow-missing",
            action="store_true",
            help="File even when some template fields could not be read (the days and KEP are still required).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Show what would be created; save nothing.")

    def handle(self, *args, **options):
        text = _read_text(options["file"], options.get("stdin"))
        if not text.strip():
            raise CommandError("The email is empty.")
        parsed = parse_request_email(text)

        required = [n for n in ("days", "kep_number") if n in parsed.problems]
        if required:
            raise CommandError(_field_error(parsed, required))
        if parsed.missing and not options["allow_missing"]:
            raise CommandError(_field_error(parsed, parsed.missing) + " Fix the email or pass --allow-missing.")

        notes = list(parsed.warnings)
        hint = ""
        if options["received_at"]:
            received_at = parse_received_at(options["received_at"])
        elif parsed.sent_at is not None:
            received_at = parsed.sent_at
        else:
            received_at = tz.utc_now()
            hint = " (The email has no readable Date: header, so it was taken as sent now; pass --received-at.)"
            notes.append("No readable Date: header and no --received-at; the request is recorded as sent now.")

        user = None
        if options["requester"]:
            user = get_user_model().objects.filter(username=options["requester"]).first()
            if user is None:
                raise CommandError(f"No user {options['requester']!r} (--requester).")
        requester_name = "" if user else (parsed.sender or "email")[:200]

        milestone = resolve_milestone(
            parsed=parsed,
            release_slug=options["release"],
            milestone_opt=options["milestone"],
            received_at=received_at,
            notes=notes,
        )
        for name in parsed.missing:
            notes.append(f"Not read: {FIELD_LABELS[name]} ({parsed.problems[name]}).")
        notes += _label_checks(parsed, received_at)

        try:
            with transaction.atomic():
                request = self._file(parsed, milestone, user, requester_name, received_at, options["create_kep"])
                self._report(request, notes, dry_run=options["dry_run"])
                if options["dry_run"]:
                    raise _DryRun
        except _DryRun:
            return
        except DomainError as exc:
            raise CommandError(exc.message + hint) from None

    def _file(self, parsed: ParsedRequest, milestone, user, requester_name: str, received_at, create_kep: bool):
        enhancement = _enhancement(parsed, create_kep)
        base = parsed.fields
        request = exception_request_submit(
            enhancement=enhancement,
            milestone=milestone,
            fields=RequestFields(**{**vars(base), "pr_urls": list(base.pr_urls)}),
            requester=user,
            requester_name=requester_name,
            submitted_at=received_at,
        )
        for amendment in parsed.amendments:
            at = amendment.sent_at if amendment.sent_at and amendment.sent_at >= received_at else received_at
            fields = RequestFields(
                **{
                    **vars(base),
                    "pr_urls": list(base.pr_urls),
                    "days": amendment.days,
                    # The old "until" no longer holds; the zone the requester works in does.
                    "until_text": amendment.until_text,
                    "until_zone": amendment.until_zone or base.until_zone,
                    "source_text": amendment.text,
                }
            )
            request = exception_request_amend(
                request=request, fields=fields, actor=user, actor_label=requester_name, at=at
            )
        return request

    def _report(self, request, notes: list[str], *, dry_run: bool) -> None:
        zone = request.release.zone
        head = (
            "Dry run, nothing saved. Would create exception request"
            if dry_run
            else f"Created exception request #{request.pk}"
        )
        self.stdout.write(
            f"{head} for KEP-{request.enhancement.number} "
            f"({request.milestone.title}, release {request.release.slug}): {request.state}, {request.days} days, "
            f"requested by {request.requester_label}, sent {tz.render(request.submitted_at, zone)}"
        )
        for revision in request.revisions.order_by("number"):
            until = f", until {revision.until_text!r}" if revision.until_text else ""
            in_zone = f" ({revision.until_zone})" if revision.until_zone else ""
            self.stdout.write(
                f"  v{revision.number}: {revision.days} days{until}{in_zone}, "
                f"recorded {tz.render(revision.created_at, zone)}"
            )
        for warning in [*request.warnings, *notes]:
            self.stdout.write(f"  warning: {warning}")
