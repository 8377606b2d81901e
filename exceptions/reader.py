"""Read an exception thread end to end, and file what it says.

The two entry points every face uses (``ingest_exception``, ``POST .../parse/``, the
mailbox poller):

``read_thread(source, *, received_at=None) -> ThreadReading``
    ``source`` is pasted text, a raw message (``.eml``, MIME decoded), a whole mbox
    file, bytes of any of these, or an ``email.message.Message``. The reading holds the
    request (``exceptions.parsing.ParsedRequest``: fields, amendments, problems), the
    release team's decision when the thread has one (``DecisionReading``, a *proposal*),
    the until-text read as an instant, and which freeze and release the text points
    at, each with the reason. Nothing is saved.
    Raises ``UnreadableInput`` (400) for input that is not a readable text (empty,
    binary, a NUL byte, over ``MAX_CHARS``, an implausible Date: header) and
    ``NotARequest`` (422) for text that is something else (a release-team reply on its
    own, an exceptions.yaml entry, a bare approval comment, a KEP pull-request thread);
    both carry one sentence that says what to do.

``file_thread(reading, *, release=None, milestone=None, entered_by=None, ...) -> FiledThread``
    Files the request with ``exception_request_submit``, each amendment with
    ``exception_request_amend`` (a revision each) and the decision as a
    ``ProposedDecision`` (``proposed_decision_create``): never applied, a release-team
    member confirms it. ``entered_by`` is who ran the command or owns the mailbox; the
    email's author is the requester.

Rules (documented here because they are judgement calls):

- A bare weekday in an until-text or a grant ("until EOD Friday CET") is the first such
  day after the day the message was sent; "end of day" is the next midnight in that
  zone (``tz.end_of_day``); see ``tz.read_deadline_text``.
- The until-text's day is compared with the days asked, counted from the day the
  request was sent (in the zone the until-text names); a difference is a warning, the
  days asked stay what is filed.
- Milestone, when not given: the freeze the subject names, else the body, else the
  template's answers; else the one freeze whose request window (freeze .. freeze +
  the release's window days) holds the date the request was sent. Release, when not
  given: a "1.NN" the subject or body names, else the active release holding that
  freeze. Every inference is reported with its reason.
"""

from __future__ import annotations

import datetime as dt
import email
import email.message
import email.policy
import re
from dataclasses import dataclass, field

from django.db import transaction

from exceptions.parsing import (
    _HEADER_RE,
    _MD_LINK_RE,
    FIELD_LABELS,
    MILESTONE_KIND_PATTERNS,
    ParsedRequest,
    _date_before,
    _Line,
    _parse_date,
    _split_lines,
    author_before,
    decision_outcome,
    display_name,
    parse_request_email,
)
from releasecal import tz
from releasecal.errors import DomainError, ValidationFailed

# A request thread is a few kilobytes; a long one with quoted replies some tens.
MAX_CHARS = 1_000_000


class UnreadableInput(ValidationFailed):
    """The input is not text the reader can read (400)."""

    code = "unreadable"


class NotARequest(DomainError):
    """The text is readable but is not an exception request (422)."""

    status_code = 422
    code = "not_a_request"


# ------------------------------------------------------------------------- input


def _refuse(message: str, **extra) -> UnreadableInput:
    return UnreadableInput(message, extra=extra)


def _decode(data: bytes) -> str:
    if len(data) > MAX_CHARS * 4:
        raise _refuse(f"The input is {len(data) / 1e6:.1f} MB; the reader takes at most {MAX_CHARS:,} characters.")
    if b"\x00" in data:
        offset = data.index(b"\x00")
        raise _refuse(
            f"The input has a NUL byte at offset {offset}: it is binary or corrupted, not an email.", offset=offset
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _check_text(text: str) -> str:
    if len(text) > MAX_CHARS:
        raise _refuse(
            f"The text is {len(text):,} characters; the reader takes at most {MAX_CHARS:,} "
            "(a request thread is a few thousand). Paste the request and its replies only.",
            length=len(text),
        )
    if "\x00" in text:
        offset = text.index("\x00")
        raise _refuse(
            f"The text has a NUL byte at character {offset}: it is binary or corrupted, not an email.", offset=offset
        )
    if not text.strip():
        raise _refuse("The email is empty: there is nothing to read.")
    sample = text[:20000]
    control = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\t\n\r\f\v") or ch == "\ufffd")
    if control > max(8, len(sample) // 50):
        raise _refuse(
            f"This looks like binary data ({control} control or undecodable characters in the first "
            f"{len(sample):,}), not an email."
        )
    return text


_MBOX_FROM_RE = re.compile(r"^From \S+.*\d{4}\s*$", re.M)


def _message_text(message: email.message.Message) -> str:
    """A message as the parser reads a pasted one: From/Date/Subject lines, then its text."""
    headers = [f"{name}: {message[name]}" for name in ("From", "Date", "Subject") if message[name]]
    try:
        if isinstance(message, email.message.EmailMessage):
            part = message.get_body(preferencelist=("plain", "html"))
        else:
            part = next((p for p in message.walk() if p.get_content_type() in {"text/plain", "text/html"}), None)
        if part is None:
            body = ""
        elif isinstance(part, email.message.EmailMessage):
            body = part.get_content()
        else:
            payload = part.get_payload(decode=True) or b""
            body = payload.decode(part.get_content_charset() or "utf-8", errors="replace")
        if part is not None and part.get_content_type() == "text/html":
            from exceptions.parsing import _html_to_text

            body = _html_to_text(body)
    except (LookupError, ValueError, TypeError, AttributeError) as exc:
        raise _refuse(f"The message's body could not be decoded ({exc.__class__.__name__}).") from None
    return "\n".join(headers) + "\n\n" + str(body)


def _split_mbox(text: str) -> list[str] | None:
    """The messages of an mbox file, oldest first; None when ``text`` is not one."""
    normalized = text.replace("\r\n", "\n")
    if not _MBOX_FROM_RE.match(normalized.lstrip("\n")):
        return None
    chunks = [c for c in re.split(r"(?:^|\n)From \S+[^\n]*\d{4}[ \t]*\n", "\n" + normalized.lstrip("\n")) if c.strip()]
    messages = []
    for chunk in chunks:
        chunk = re.sub(r"^>(>*From )", r"\1", chunk, flags=re.M)  # mboxrd quoting
        message = email.message_from_string(chunk, policy=email.policy.default)
        messages.append((_parse_date(str(message["Date"] or "")), len(messages), _message_text(message)))
    # Oldest first: the parser reads a pasted thread top to bottom.
    messages.sort(key=lambda m: (m[0] is None, m[0] or dt.datetime.min.replace(tzinfo=dt.UTC), m[1]))
    return [m[2] for m in messages]


def source_text(source: str | bytes | email.message.Message) -> str:
    """The text the parser reads, from any accepted source; refuses unreadable input."""
    if isinstance(source, email.message.Message):
        return _check_text(_message_text(source))
    if isinstance(source, bytes | bytearray):
        source = _decode(bytes(source))
    if not isinstance(source, str):
        raise _refuse(f"Expected text, bytes or an email message, not {type(source).__name__}.")
    text = _check_text(source)
    messages = _split_mbox(text)
    if messages is not None:
        return _check_text("\n\n".join(messages))
    return text


# ------------------------------------------------------------------ plausibility

_YEAR_IN_DATE_RE = re.compile(r"\b(\d{1,4})\s+\d{1,2}:\d{2}")


def _check_dates(lines: list[_Line]) -> None:
    """Every Date: header must be an instant between 1970 and 2100 (a year 1 or 9999
    header is a forged or broken message, never a request's real time)."""
    for line in lines:
        header = _HEADER_RE.match(line.text)
        if not header or header.group(1).lower() not in {"date", "sent"}:
            continue
        value = header.group(2).strip()
        instant = _parse_date(value)
        # The year as written: the email parser reads "0001" as 2001 (two-digit years).
        year = _YEAR_IN_DATE_RE.search(value)
        written = int(year.group(1)) if year and len(year.group(1)) >= 3 else None
        try:
            if instant is not None:
                tz.check_plausible(instant, field="Date: header")
            if written is not None:
                tz.check_plausible_date(dt.date(max(written, 1), 1, 1), field="Date: header", shown=value[:60])
        except tz.ImplausibleInstant:
            raise _refuse(
                f"The Date: header {value[:60]!r} is not a plausible time for an email "
                "(expected between 1970 and 2099); fix it or give --received-at.",
                date=value[:60],
            ) from None


# ---------------------------------------------------------------- non-requests

# Line-anchored patterns match blanks with [^\S\n] (whitespace but the newline: NBSP from
# an HTML mail's &nbsp; too), never \s: \s spans newlines, and
# "^\s*-?\s*" on a run of blank lines backtracks in cubic time (50,000 newlines: minutes).
_YAML_ONLY_RE = re.compile(r"^[^\S\n]*(?:-[^\S\n]*)?(date_requested|date_reviewed|thread|pull_requests)[^\S\n]*:", re.M)
_YAML_TOP_RE = re.compile(r"^(?:enhancementFreeze|codeFreeze|docsFreeze|testFreeze)\s*:", re.M)
_KEP_PR_RE = re.compile(
    r"One-line PR description|^[^\S\n]*(?:-[^\S\n]*)?(?:Issue link|Other comments)[^\S\n]*:|\bkind/kep\b"
    r"|\bPRR\s+review\b.*\bLGTM",
    re.I | re.M,
)
_TRACKING_RE = re.compile(
    r"Enhancements?\s+(?:team|lead)\s+here|Here'?s where this enhancement currently stands|"
    r"this enhancement has been removed from the milestone|(?:feel free|you can) (?:to )?file an \[?exception",
    re.I,
)
_BARE_APPROVAL_RE = re.compile(
    r"^(?:\s*(?:/(?:lgtm|approve|hold\s+cancel|unhold)|\+1|lgtm|sgtm|approved?|ship\s+it|looks\s+good(?:\s+to\s+me)?"
    r"|:\+1:|\U0001f44d|thanks?[!.]?)[\s!.,]*)+$",
    re.I,
)

NON_REQUEST_MESSAGES = {
    "exceptions_yaml": "This is an exceptions.yaml entry, not a request email: import it with "
    "`manage.py import_exceptions_yaml FILE --release 1.NN`.",
    "kep_pr_thread": "This looks like a KEP pull-request thread (its description and review comments), not an "
    "exception request: paste the request email sent to the release team.",
    "release_team_reply": "This is a release-team reply, not a request: paste the whole thread (the request "
    "and the reply), so the decision can be proposed for it.",
    "tracking_comment": "This is the enhancements team's tracking comment on a KEP issue, not a request: the "
    "exception request is the email the KEP's owner sends to the release team.",
    "bare_approval": "This is a bare approval comment (/lgtm, /approve, +1), not a request: it names no "
    "enhancement and asks for no time.",
    "no_template": "This text has none of the exception request template's fields (Enhancement name, "
    "Additional time needed, Reason ...): it is not a request.",
}


def _template_keys_found(parsed: ParsedRequest) -> list[str]:
    return [name for name in FIELD_LABELS if not parsed.problems.get(name, "").endswith("is not in the email")]


def classify_non_request(text: str, parsed: ParsedRequest) -> str:
    """The kind of non-request ``text`` is (a key of NON_REQUEST_MESSAGES), or "" when
    it reads as a request (the days or the KEP found, and at least three template keys)."""
    plain = _MD_LINK_RE.sub(r"\1", text)
    if _YAML_TOP_RE.search(plain) or len({m.group(1).lower() for m in _YAML_ONLY_RE.finditer(plain)}) >= 2:
        return "exceptions_yaml"
    found = _template_keys_found(parsed)
    if len(found) >= 3 and ("days" in found or "issue_url" in found or parsed.kep_number is not None):
        return ""
    if _KEP_PR_RE.search(plain):
        return "kep_pr_thread"
    body = "\n".join(ln for ln in plain.splitlines() if ln.strip() and not _HEADER_RE.match(ln))
    if len(body) <= 300 and _BARE_APPROVAL_RE.match(" ".join(body.split())):
        return "bare_approval"
    decided = any(decision_outcome(line) for line in plain.splitlines())
    reviewed = bool(re.search(r"^[^\S\n]*/(?:lgtm|approve)\b", plain, re.M | re.I))
    if reviewed and (decided or _TRACKING_RE.search(plain) or len(body) > 300):
        return "kep_pr_thread"  # review commands among other comments: a pull request's conversation
    if decided:
        return "release_team_reply"
    if _TRACKING_RE.search(plain):
        return "tracking_comment"
    if not found:
        return "no_template"
    return ""


# ----------------------------------------------------------------- the decision


@dataclass
class DecisionReading:
    """The release team's decision as read from the thread: a proposal, not a decision."""

    outcome: str  # "approved" | "rejected"
    source_text: str  # the reply's paragraph it was read from
    granted: tz.DeadlineText | None = None
    author: str = ""
    sent_at: dt.datetime | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "outcome": self.outcome,
            "source_text": self.source_text,
            "granted": self.granted.as_dict() if self.granted else None,
            "author": self.author,
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
            "warnings": list(self.warnings),
        }


_DEADLINE_LEAD_RES = (
    re.compile(r"\bdeadline\b[^.\n]{0,80}?\b(?:is|was|will\s+be|of|:|set\s+to|moved\s+to)\s+(?P<text>.+)", re.I),
    re.compile(r"\b(?:until|till|through|due(?:\s+by)?)\s+(?P<text>.+)", re.I),
    re.compile(r"\bby\s+(?P<text>.+)", re.I),
)
_SENTENCE_END_RE = re.compile(r"(?<!\b[A-Z])(?<!\be\.g)(?<!\bi\.e)\.(?:\s|$)|\n\s*\n|[;!?](?:\s|$)")


def _deadline_phrases(paragraph: str) -> list[str]:
    phrases = []
    for regex in _DEADLINE_LEAD_RES:
        for match in regex.finditer(paragraph):
            rest = match["text"]
            end = _SENTENCE_END_RE.search(rest)
            phrase = (rest[: end.start()] if end else rest).strip().rstrip(".,)")
            if phrase:
                phrases.append(phrase[:200])
    return phrases


def read_decision(lines: list[_Line], consumed: set[int], *, reference: dt.datetime | None) -> DecisionReading | None:
    """The latest release-team decision in the thread (deeper quotes are older)."""
    candidates = [
        ln for ln in lines if ln.index not in consumed and not ln.blank and decision_outcome(ln.text) and not
        _HEADER_RE.match(ln.text)
    ]  # fmt: skip
    if not candidates:
        return None
    line = max(candidates, key=lambda ln: (-ln.depth, ln.index))
    outcome = decision_outcome(line.text)
    # The paragraph around the decision line, at its depth.
    start = line.index
    while start > 0 and lines[start - 1].depth == line.depth and not lines[start - 1].blank:
        if _HEADER_RE.match(lines[start - 1].text):
            break
        start -= 1
    end = line.index
    blank_run = 0
    while end + 1 < len(lines) and lines[end + 1].depth == line.depth:
        nxt = lines[end + 1]
        if _HEADER_RE.match(nxt.text):
            break
        blank_run = blank_run + 1 if nxt.blank else 0
        if blank_run >= 2:
            break
        end += 1
    paragraph = "\n".join(ln.text for ln in lines[start : end + 1]).strip()
    found_date = _date_before(lines, line)
    sent_at = found_date[1] if found_date else None
    reading = DecisionReading(
        outcome=outcome,
        source_text=paragraph,
        author=author_before(lines, line),
        sent_at=sent_at,
    )
    if outcome != "approved":
        return reading
    plain = _MD_LINK_RE.sub(r"\1", paragraph)
    for phrase in _deadline_phrases(plain):
        granted = tz.read_deadline_text(phrase, reference=sent_at or reference)
        if granted.day is not None:
            reading.granted = granted
            reading.warnings.extend(granted.warnings)
            if granted.instant is None:
                reading.warnings.append(
                    f"The granted deadline {phrase!r} could not be placed ({granted.problem}); "
                    "the release-team member confirming it gives the time."
                )
            break
    if reading.granted is None:
        reading.warnings.append(
            "The approval names no deadline that could be read; confirming it grants the default "
            "(the freeze plus the days asked, at end of day in the release's zone)."
        )
    return reading


# ---------------------------------------------------------------- the reading


@dataclass
class Inference:
    value: str  # a milestone kind slug or a release slug; "" when none
    reason: str

    def as_dict(self) -> dict:
        return {"value": self.value or None, "reason": self.reason}


@dataclass
class ThreadReading:
    text: str
    request: ParsedRequest
    decision: DecisionReading | None = None
    until: tz.DeadlineText | None = None  # the request's until-text as an instant
    milestone_kind: Inference = field(default_factory=lambda: Inference("", ""))
    release: Inference = field(default_factory=lambda: Inference("", ""))
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """JSON-safe; ``POST /api/v1/exceptions/parse/`` serves it as is."""
        data = self.request.as_dict()
        data["sender"] = self.request.sender
        data["until"] = self.until.as_dict() if self.until else None
        data["proposed_decision"] = self.decision.as_dict() if self.decision else None
        data["inferred"] = {"milestone_kind": self.milestone_kind.as_dict(), "release": self.release.as_dict()}
        data["warnings"] = list(dict.fromkeys([*data["warnings"], *self.warnings]))
        return data


# In the subject any "1.NN" / "v1.NN" is the release; in the body only one introduced as
# a release ("v1.31", "release 1.31", "for 1.31", "Kubernetes 1.31"), not "shipped in 1.10".
_SUBJECT_RELEASE_RE = re.compile(r"(?<![\w.])v?(?P<minor>1\.\d{1,2})(?![\w]|\.\d)", re.I)
_RELEASE_RE = re.compile(
    r"(?:(?<![\w.])v|\brelease[\s-]*v?|\bkubernetes\s+v?|\bk8s\s+v?|\[v?|\bfor\s+v?)(?P<minor>1\.\d{1,2})(?![\w]|\.\d)",
    re.I,
)


def infer_release(subject: str, body: str) -> Inference:
    for where, text, regex in (("subject", subject, _SUBJECT_RELEASE_RE), ("text", body, _RELEASE_RE)):
        found = list(dict.fromkeys(m["minor"] for m in regex.finditer(text)))
        if len(found) == 1:
            return Inference(found[0], f"the {where} names release {found[0]}")
        if len(found) > 1:
            return Inference("", f"the {where} names several releases ({', '.join(found)})")
    return Inference("", "the text names no release")


def infer_milestone_kind(parsed: ParsedRequest, text: str) -> Inference:
    answers = "\n".join([parsed.fields.reason, parsed.fields.risks_adding, parsed.fields.risks_cutting])
    for where, source in (("subject", parsed.subject), ("text", text), ("answers", answers)):
        found: list[tuple[int, str, str]] = []
        for slug, regex in MILESTONE_KIND_PATTERNS:
            match = regex.search(source)
            if match:
                found.append((match.start(), slug, match.group(0)))
        if len(found) == 1:
            return Inference(found[0][1], f"the {where} says {found[0][2]!r}")
        if len(found) > 1:
            kinds = ", ".join(slug for _, slug, _ in sorted(found))
            if where == "subject":
                return Inference("", f"the subject names several freezes ({kinds})")
    return Inference("", "no freeze is named in the subject or the text")


def _until_instant(
    parsed: ParsedRequest, received_at: dt.datetime | None = None
) -> tuple[tz.DeadlineText | None, list[str]]:
    f = parsed.fields
    if not f.until_text:
        return None, []
    sent = received_at or parsed.sent_at
    reading = tz.read_deadline_text(f.until_text, reference=sent, default_zone=f.until_zone)
    warnings = list(reading.warnings)
    if reading.instant is None:
        warnings.append(f"The until-text {f.until_text!r} was kept as text only: {reading.problem}.")
        return reading, warnings
    f.until_at = reading.instant
    if sent is not None and reading.day is not None and parsed.days_read:
        sent_day = tz.local_date(sent, reading.zone or "UTC")
        implied = (reading.day - sent_day).days
        if implied != f.days:
            warnings.append(
                f"The request asks for {f.days} days, but 'until {f.until_text}' is "
                f"{tz.render_date(reading.day)} ({tz.isoformat_utc(reading.instant)}), {implied} days after it "
                f"was sent ({tz.render_date(sent_day)}); the {f.days} days asked are what is filed."
            )
    return reading, warnings


def read_thread(
    source: str | bytes | email.message.Message, *, received_at: dt.datetime | None = None
) -> ThreadReading:
    """Read a request thread; see the module docstring. Raises UnreadableInput / NotARequest."""
    text = source_text(source)
    parsed = parse_request_email(text)
    lines = _split_lines(parsed.fields.source_text)
    _check_dates(lines)
    if received_at is not None:
        received_at = tz.check_plausible(received_at, field="time received")
    kind = classify_non_request(parsed.fields.source_text, parsed)
    if kind:
        raise NotARequest(NON_REQUEST_MESSAGES[kind], extra={"kind": kind})
    reading = ThreadReading(text=text, request=parsed)
    reading.until, more = _until_instant(parsed, received_at)
    reading.warnings += more
    consumed = _template_lines(parsed, lines)
    reading.decision = read_decision(lines, consumed, reference=parsed.sent_at or received_at)
    if reading.decision is not None and reading.decision.author and reading.decision.author == parsed.sender:
        reading.warnings.append(
            f"The decision seems written by the requester ({parsed.sender}); it is proposed all the same, "
            "for the release team to check."
        )
    reading.milestone_kind = infer_milestone_kind(parsed, text)
    reading.release = infer_release(parsed.subject, text)
    return reading


def _template_lines(parsed: ParsedRequest, lines: list[_Line]) -> set[int]:
    """Lines that hold template answers (a decision is never read from them)."""
    from exceptions.parsing import _match_key

    consumed: set[int] = set()
    inside = False
    depth = 0
    for line in lines:
        if _match_key(line):
            inside, depth = True, line.depth
            consumed.add(line.index)
            continue
        if inside and (line.depth != depth or _HEADER_RE.match(line.text) or decision_outcome(line.text)):
            inside = False
        if inside:
            consumed.add(line.index)
    return consumed


# ------------------------------------------------------------------- filing


@dataclass
class FiledThread:
    """What ``file_thread`` wrote (or, in a dry run, would write)."""

    request: object  # ExceptionRequest
    proposal: object | None  # ProposedDecision
    milestone_reason: str
    notes: list[str]
    report: list[str]  # the lines the command prints


class _Rollback(Exception):
    pass


def _describe(milestone) -> str:
    return f"{milestone.title} of {milestone.release.slug} (#{milestone.pk})"


def resolve_milestone(
    reading: ThreadReading,
    *,
    release_slug: str | None = None,
    milestone_opt: str | None = None,
    received_at: dt.datetime,
):
    """(milestone, reason) from the options and what the thread says; ValidationFailed
    (one sentence) when it cannot be told. See the module docstring for the order."""
    from exceptions.selectors import exception_milestone_get
    from exceptions.services import request_window_closes
    from releasecal.models import Milestone, MilestoneKind, Release
    from releasecal.selectors import release_list_active

    qs = Milestone.objects.select_related("release", "kind")
    if milestone_opt and str(milestone_opt).strip().isdigit():
        if len(str(milestone_opt).strip()) > 18:
            raise ValidationFailed(f"No milestone with id {str(milestone_opt)[:20]}.")
        milestone = exception_milestone_get(milestone_id=int(milestone_opt), release_slug=release_slug)
        return milestone, f"{_describe(milestone)}, as given"

    release = None
    release_reason = ""
    if release_slug:
        release = Release.objects.filter(slug=release_slug).first()
        if release is None:
            raise ValidationFailed(f"No release {release_slug!r}.", extra={"release": release_slug})
        release_reason = "as given"
    elif reading.release.value:
        release = Release.objects.filter(slug=reading.release.value).first()
        if release is not None:
            release_reason = f"inferred: {reading.release.reason}"

    kind = (milestone_opt or "").strip()
    kind_reason = "as given" if kind else ""
    if not kind and reading.milestone_kind.value:
        kind, kind_reason = reading.milestone_kind.value, f"inferred: {reading.milestone_kind.reason}"
    if kind and not MilestoneKind.objects.filter(slug=kind).exists():
        slugs = ", ".join(MilestoneKind.objects.values_list("slug", flat=True))
        raise ValidationFailed(f"Unknown milestone kind {kind!r}; use one of: {slugs}, or a milestone id.")
    if kind and release is not None:
        # Named by release and kind (given or read from the text): the one shared rule.
        milestone = exception_milestone_get(release_slug=release.slug, kind=kind)
        return milestone, f"{_describe(milestone)}, freeze {kind_reason}; release {release.slug} {release_reason}"

    scope = qs.filter(cancelled=False, kind__allows_exceptions=True)
    scope = scope.filter(release=release) if release is not None else scope.filter(release__in=release_list_active())
    if kind:
        scope = scope.filter(kind__slug=kind)
    candidates = list(scope)
    by_date = ""
    if kind and len(candidates) == 1:
        milestone = candidates[0]
    else:
        # By date: the freeze whose request window holds the time the request was sent;
        # for a named freeze, else the one whose window had not closed yet (filed ahead).
        chosen = [m for m in candidates if m.deadline <= received_at <= request_window_closes(m)]
        if len(chosen) != 1 and kind:
            chosen = [m for m in candidates if received_at <= request_window_closes(m)]
        if len(chosen) != 1:
            said = reading.milestone_kind.reason if not kind else f"the freeze is {kind}"
            where = f"release {release.slug}" if release is not None else "the active releases"
            raise ValidationFailed(
                f"Could not tell which freeze the request is for ({said}; {len(chosen)} freezes of {where} "
                f"fit the time it was sent, {tz.render(received_at, 'UTC')}); pass --milestone "
                "(a kind slug such as code-freeze, or a milestone id) and --release.",
                extra={"candidates": len(chosen)},
            )
        milestone = chosen[0]
        window = (
            f"its request window ({tz.render_in_zone(milestone.deadline, milestone.release.zone)} + "
            f"{milestone.release.exception_window_days} days) holds the time the request was sent, "
            f"{tz.render_in_zone(received_at, milestone.release.zone)}"
        )
        by_date = f"inferred by date ({reading.milestone_kind.reason}): {window}" if not kind else f"by date: {window}"
    reason = f"{_describe(milestone)}, {'; '.join(r for r in (kind_reason, by_date) if r) or 'the only one'}"
    if release_reason:
        reason += f"; release {milestone.release.slug} {release_reason}"
    elif reading.release.value and reading.release.value != milestone.release.slug:
        reason += f"; note: {reading.release.reason}, which is not a known release"
    return milestone, reason


def _requester_user(reading: ThreadReading):
    """The user whose email address wrote the request, when exactly one has it."""
    from django.contrib.auth import get_user_model

    address = reading.request.sender_address
    if not address:
        return None
    users = list(get_user_model().objects.filter(email__iexact=address, is_active=True)[:2])
    return users[0] if len(users) == 1 else None


def file_thread(
    reading: ThreadReading,
    *,
    release: str | None = None,
    milestone: str | None = None,
    received_at: dt.datetime | None = None,
    entered_by=None,
    requester=None,
    create_kep: bool = False,
    allow_missing: bool = False,
    dry_run: bool = False,
) -> FiledThread:
    """File what ``reading`` says through the services (see the module docstring).

    ``requester``: the user who asked (default: the user whose email address sent the
    request, else none and the From: name is kept). ``entered_by``: who ran the command
    or owns the mailbox. Raises DomainError subclasses with one sentence each; in a
    dry run nothing is saved and the report says what would be.
    """
    parsed = reading.request
    notes = list(dict.fromkeys([*parsed.warnings, *reading.warnings]))
    required = [n for n in ("days", "kep_number") if n in parsed.problems]
    if required:
        raise ValidationFailed(_field_error(parsed, required), extra={"problems": parsed.problems})
    if parsed.missing and not allow_missing:
        raise ValidationFailed(
            _field_error(parsed, parsed.missing) + " Fix the email or pass --allow-missing.",
            extra={"problems": parsed.problems},
        )
    hint = ""
    if received_at is not None:
        received_at = tz.to_utc(received_at)
    elif parsed.sent_at is not None:
        received_at = parsed.sent_at
    else:
        received_at = tz.utc_now()
        hint = " (The email has no readable Date: header, so it was taken as sent now; pass --received-at.)"
        notes.append("No readable Date: header and no --received-at; the request is recorded as sent now.")
    try:
        return _file(reading, parsed, notes, release, milestone, received_at, entered_by, requester, create_kep,
                     dry_run)  # fmt: skip
    except DomainError as exc:
        if hint:
            raise type(exc)(exc.message + hint, extra=exc.extra) from None
        raise


def _file(reading, parsed, notes, release, milestone, received_at, entered_by, requester, create_kep, dry_run):
    from exceptions.services import (
        RequestFields,
        exception_request_amend,
        exception_request_submit,
        proposed_decision_create,
    )
    from releasecal.models import Enhancement
    from releasecal.services import enhancement_upsert

    target, reason = resolve_milestone(reading, release_slug=release, milestone_opt=milestone, received_at=received_at)
    for name in parsed.missing:
        notes.append(f"Not read: {FIELD_LABELS[name]} ({parsed.problems[name]}).")
    for until_text, zone in [(parsed.fields.until_text, parsed.fields.until_zone)]:
        written = tz.seasonal_label(until_text)
        if written and zone and (reading.until is None or reading.until.instant is None):
            in_force = tz.abbreviation(received_at, zone)
            if in_force != written:
                notes.append(f"'until {until_text}' says {written}, but {in_force} is in force in {zone} then.")

    if requester is None:
        requester = _requester_user(reading)
    requester_name = "" if requester is not None else (parsed.sender or "email")[:200]
    report: list[str] = []
    result: FiledThread | None = None
    try:
        with transaction.atomic():
            enhancement = Enhancement.objects.filter(number=parsed.kep_number).first()
            if enhancement is None:
                if not create_kep:
                    raise ValidationFailed(
                        f"KEP-{parsed.kep_number} is not known; import it first (import_keps) "
                        "or pass --create-kep to create it from the email.",
                        extra={"kep": parsed.kep_number},
                    )
                if not parsed.fields.sig:
                    raise ValidationFailed(
                        f"--create-kep needs the SIG of KEP-{parsed.kep_number}, but the 'SIG:' field could not "
                        "be read."
                    )
                enhancement = enhancement_upsert(
                    number=parsed.kep_number,
                    title=parsed.fields.enhancement_name or f"KEP-{parsed.kep_number}",
                    owning_sig=parsed.fields.sig,
                    issue_url=parsed.fields.issue_url,
                )
            base = parsed.fields
            request = exception_request_submit(
                enhancement=enhancement,
                milestone=target,
                fields=RequestFields(**{**vars(base), "pr_urls": list(base.pr_urls)}),
                requester=requester,
                requester_name=requester_name,
                requester_email=parsed.sender_address if requester is None else "",
                submitted_at=received_at,
                entered_by=entered_by,
            )
            for amendment in parsed.amendments:
                at = amendment.sent_at if amendment.sent_at and amendment.sent_at >= received_at else received_at
                until = (
                    tz.read_deadline_text(
                        amendment.until_text, reference=at, default_zone=amendment.until_zone or base.until_zone
                    )
                    if amendment.until_text
                    else None
                )
                fields = RequestFields(
                    **{
                        **vars(base),
                        "pr_urls": list(base.pr_urls),
                        "days": amendment.days,
                        # The old "until" no longer holds; the zone the requester works in does.
                        "until_text": amendment.until_text,
                        "until_zone": amendment.until_zone or base.until_zone,
                        "until_at": until.instant if until else None,
                        "source_text": amendment.text,
                    }
                )
                request = exception_request_amend(
                    request=request,
                    fields=fields,
                    actor=requester,
                    actor_label=requester_name,
                    at=at,
                    entered_by=entered_by,
                )
            proposal = None
            decision = reading.decision
            if decision is not None:
                granted = decision.granted
                proposal = proposed_decision_create(
                    request=request,
                    outcome=decision.outcome,
                    source_text=decision.source_text,
                    granted_text=granted.text if granted else "",
                    granted_until=granted.instant if granted else None,
                    granted_zone=granted.zone if granted and granted.instant else "",
                    warnings=decision.warnings,
                    readings=list(granted.readings) if granted else [],
                    author_name=decision.author,
                    sent_at=decision.sent_at,
                    entered_by=entered_by,
                )
            report = _report(request, proposal, reason, notes, entered_by, dry_run=dry_run)
            result = FiledThread(request, proposal, reason, notes, report)
            if dry_run:
                raise _Rollback
    except _Rollback:
        pass
    assert result is not None
    return result


def _field_error(parsed: ParsedRequest, names: list[str]) -> str:
    parts = []
    for name in names:
        label = FIELD_LABELS.get(name, "KEP number")
        parts.append(f"'{label}' ({parsed.problems.get(name, 'not read')})")
    noun = "field" if len(parts) == 1 else "fields"
    return f"Could not read the {noun} " + "; ".join(parts) + "."


def _report(request, proposal, reason: str, notes: list[str], entered_by, *, dry_run: bool) -> list[str]:
    zone = request.release.zone
    head = (
        "Dry run, nothing saved. Would create exception request"
        if dry_run
        else (f"Created exception request #{request.pk}")
    )
    entered = entered_by.get_username() if entered_by is not None else "unknown (pass --entered-by)"
    lines = [
        f"{head} for KEP-{request.enhancement.number} ({request.milestone.title}, release {request.release.slug}): "
        f"{request.state}, {request.days} days{' (admission only, no extra time)' if request.days == 0 else ''}, "
        f"requested by {request.requester_label}, entered by {entered}, sent {tz.render(request.submitted_at, zone)}",
        f"  milestone: {reason}",
    ]
    for revision in request.revisions.order_by("number"):
        until = f", until {revision.until_text!r}" if revision.until_text else ""
        in_zone = f" ({revision.until_zone})" if revision.until_zone else ""
        at = f" = {tz.render_deadline(revision.until_at, revision.until_zone or zone)}" if revision.until_at else ""
        lines.append(
            f"  v{revision.number}: {revision.days} days{until}{in_zone}{at}, "
            f"recorded {tz.render(revision.created_at, zone)}"
        )
    if proposal is not None:
        granted = (
            f", granted until {tz.render_deadline(proposal.granted_until, proposal.granted_zone or zone)}"
            if proposal.granted_until
            else (f", deadline {proposal.granted_text!r} not placed" if proposal.granted_text else "")
        )
        by = f" by {proposal.author_name}" if proposal.author_name else ""
        lines.append(
            f"  proposed decision{' #' + str(proposal.pk) if not dry_run else ''}: {proposal.outcome}{granted} "
            f"(read from the reply{by}); not applied: a release-team member confirms it in the admin or with "
            f"POST /api/v1/exceptions/proposed-decisions/<id>/confirm/"
        )
        for warning in proposal.warnings:
            lines.append(f"  decision warning: {warning}")
    for warning in [*request.warnings, *notes]:
        lines.append(f"  warning: {warning}")
    return lines


__all__ = [
    "MAX_CHARS",
    "DecisionReading",
    "Inference",
    "NotARequest",
    "ThreadReading",
    "UnreadableInput",
    "classify_non_request",
    "display_name",
    "file_thread",
    "read_thread",
    "resolve_milestone",
    "source_text",
]
