"""The thread reader's pipeline, read top to bottom. Pure: nothing is saved.

``read_thread(source, *, received_at=None) -> ThreadReading`` runs the phases, each a
function of its own module returning a dataclass:

0. ``source.source_text``: the input as text (an mbox's messages oldest first, MIME
   decoded); refuses unreadable input.
1. ``messages.split_messages`` -> ``Thread``: the lines, each with its quote depth.
2. ``authors.read_authors`` -> ``Authors``: who wrote each line.
3. ``template.read_template`` -> ``TemplateReading``: the template's fields.
4. ``amendments.read_amendments`` -> ``AmendmentReading``: later changes of the days.
5. ``decision.read_decision`` -> ``DecisionReading``: the release team's decision, a
   *proposal*.

Then the until-text is read as an instant, and the freeze and release the text points
at are inferred (``inference``), each with the reason. A text that is something else (a
release-team reply on its own, an exceptions.yaml entry, ...) is refused
(``refusals.NotARequest``, 422).

Rules (documented here because they are judgement calls):

- The request's ``sent_at`` is the ``Date:`` header of the message that holds the
  original template; the requester is that message's author.
- A bare weekday in an until-text or a grant ("until EOD Friday CET") is the first such
  day after the day the message was sent; "end of day" is the next midnight in that
  zone (``tz.end_of_day``); see ``tz.read_deadline_text``.
- The until-text's day is compared with the days asked, counted from the day the
  request was sent (in the zone the until-text names); a difference is a warning, the
  days asked stay what is filed.
"""

from __future__ import annotations

import datetime as dt
import email.message
import re
from dataclasses import asdict, dataclass, field

from exceptions.fields import RequestFields
from exceptions.reader import budget
from exceptions.reader.amendments import Amendment, read_amendments
from exceptions.reader.authors import Author, Authors, read_authors
from exceptions.reader.decision import DecisionReading, read_decision
from exceptions.reader.inference import Inference, guess_milestone_kind, infer_milestone_kind, infer_release
from exceptions.reader.messages import HEADER_RE, Thread, parse_date, split_messages
from exceptions.reader.refusals import NON_REQUEST_MESSAGES, NotARequest, classify_non_request
from exceptions.reader.source import check_dates, source_text, unwrap_mime
from exceptions.reader.template import TemplateReading, fit_lengths, read_template, template_lines
from releasecal import tz


@dataclass
class ParsedRequest:
    fields: RequestFields
    kep_number: int | None = None
    milestone_kind: str = ""
    # The second freeze of a request naming two ("PRR and Enhancements Freeze": the
    # enhancements freeze; ``milestone_kind`` is then the PRR freeze), else "".
    also_milestone_kind: str = ""
    subject: str = ""
    amendments: list[Amendment] = field(default_factory=list)
    # RequestFields names of the template fields that could not be read, in template
    # order; ``problems`` says why for each, naming the field as the template does.
    missing: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # From the email headers, when present.
    sent_at: dt.datetime | None = None
    # The author of the message holding the template ("" when it cannot be read), how
    # it was read (authors.Author.mark), and whom it says it asks for.
    sender: str = ""
    sender_address: str = ""
    sender_mark: str = ""
    on_behalf_of: str = ""

    @property
    def days_read(self) -> bool:
        return "days" not in self.missing

    def as_dict(self) -> dict:
        """JSON-safe; served as is by ``POST /api/v1/exceptions/parse/``."""
        fields = asdict(self.fields)
        fields.pop("source_text")
        fields["until_at"] = tz.isoformat_utc(self.fields.until_at) if self.fields.until_at else None
        if not self.days_read:
            fields["days"] = None
        return {
            "subject": self.subject,
            "kep_number": self.kep_number,
            "milestone_kind": self.milestone_kind,
            "also_milestone_kind": self.also_milestone_kind,
            "fields": fields,
            "amendments": [a.as_dict() for a in self.amendments],
            "missing": list(self.missing),
            "problems": dict(self.problems),
            "warnings": list(self.warnings),
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
            "sender": self.sender,
            "sender_mark": self.sender_mark,
            "on_behalf_of": self.on_behalf_of,
        }


@dataclass
class ThreadReading:
    text: str
    request: ParsedRequest
    decision: DecisionReading | None = None
    until: tz.DeadlineText | None = None  # the request's until-text as an instant
    milestone_kind: Inference = field(default_factory=lambda: Inference("", ""))
    release: Inference = field(default_factory=lambda: Inference("", ""))
    warnings: list[str] = field(default_factory=list)
    thread_url: str = ""  # the mailing list's web page of the thread (Google Groups' footer)

    def as_dict(self) -> dict:
        """JSON-safe; ``POST /api/v1/exceptions/parse/`` serves it as is."""
        data = self.request.as_dict()
        data["sender"] = self.request.sender
        data["until"] = self.until.as_dict() if self.until else None
        data["proposed_decision"] = self.decision.as_dict() if self.decision else None
        data["inferred"] = {
            "milestone_kind": {**self.milestone_kind.as_dict(), "also": self.milestone_kind.also or None},
            "release": self.release.as_dict(),
        }
        data["warnings"] = list(dict.fromkeys([*data["warnings"], *self.warnings]))
        return data


# Google Groups ends each message with "To view this discussion visit
# https://groups.google.com/d/msgid/<group>/<message id>." (older: "on the web visit").
GROUPS_LINK = re.compile(r"https://groups\.google\.com/(?:d/msgid|g/[\w.-]+/c)/[^\s<>\"]+")


def thread_link(text: str) -> str:
    """The first Google Groups link of a thread to its discussion (the list's web page of
    the thread, the board's Exception Request Link), or ""."""
    found = GROUPS_LINK.search(text)
    return found.group(0).rstrip(".,;)") if found and len(found.group(0)) <= 500 else ""


def _request(thread: Thread) -> tuple[ParsedRequest, Authors, TemplateReading]:
    """Phases 2 to 4: (the request, the authors, the template reading)."""
    lines = thread.lines
    authors = read_authors(thread)
    template = read_template(thread)
    warnings = list(template.warnings)

    # The freeze: the subject, then the free text, then the answers.
    free = "\n".join(ln.text for ln in lines if ln.index not in template.consumed and not HEADER_RE.match(ln.text))
    answers = "\n".join(
        template.values.get(n, "") for n in ("reason", "risks_adding", "risks_cutting", "enhancement_name")
    )
    milestone_kind, also_milestone_kind, warning = guess_milestone_kind(template.subject, free, answers)
    if warning:
        warnings.append(warning)

    sent_at = None
    top_date = None
    for line in lines:
        header = HEADER_RE.match(line.text)
        if header and header.group(1).lower() in {"date", "sent"}:
            top_date = (line, parse_date(header.group(2)))
            break
    base = template.base
    base_date = thread.date_of(base.line) if base is not None else None
    # The requester is whoever wrote the message holding the template (a top-posted
    # reply's From: is the replier's); unknown when that message does not say.
    requester = authors.of(base.line) if base is not None else Author()
    if base_date is not None:
        sent_at = base_date[1]
        if sent_at is None:
            warnings.append("The Date: header above the request could not be read (expected RFC 2822).")
    elif top_date is not None and (base is None or base.line.depth == 0):
        sent_at = top_date[1]
        if sent_at is None:
            warnings.append("The Date: header could not be read (expected RFC 2822).")
    elif top_date is not None:
        warnings.append(
            "The request is quoted inside a reply and its own date is not in the text "
            "(the Date: header is the reply's); give the time it was sent explicitly."
        )

    amended = read_amendments(thread, template, authors, base_date=base_date)
    warnings += amended.warnings
    fit_lengths(template.fields, warnings)
    parsed = ParsedRequest(
        fields=template.fields,
        kep_number=template.kep_number,
        milestone_kind=milestone_kind,
        also_milestone_kind=also_milestone_kind,
        subject=template.subject,
        amendments=amended.amendments,
        missing=template.missing,
        problems=template.problems,
        warnings=list(dict.fromkeys(warnings)),
        sent_at=sent_at,
        sender=requester.name,
        sender_address=requester.address,
        sender_mark=requester.mark,
        on_behalf_of=requester.on_behalf_of,
    )
    return parsed, authors, template


def parse_request_email(text: str) -> ParsedRequest:
    """Read a request email (or a pasted thread) into fields, amendments and problems.

    ``text`` is what a person pastes, or a raw message with MIME headers (decoded first;
    ``fields.source_text`` then holds the decoded text).
    """
    return _request(split_messages(unwrap_mime(text or "")))[0]


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
    thread = split_messages(unwrap_mime(text))
    parsed, authors, template = _request(thread)
    budget.check()
    check_dates(thread.lines)
    if received_at is not None:
        received_at = tz.check_plausible(received_at, field="time received")
    kind = classify_non_request(thread.text, template)
    if kind:
        raise NotARequest(NON_REQUEST_MESSAGES[kind], extra={"kind": kind})
    reading = ThreadReading(text=text, request=parsed, thread_url=thread_link(text))
    reading.until, more = _until_instant(parsed, received_at)
    reading.warnings += more
    budget.check()
    reading.decision = read_decision(
        thread, authors, template_lines=template_lines(thread), reference=parsed.sent_at or received_at
    )
    if reading.decision is not None and reading.decision.author and reading.decision.author == parsed.sender:
        reading.warnings.append(
            f"The decision seems written by the requester ({parsed.sender}); it is proposed all the same, "
            "for the release team to check."
        )
    reading.milestone_kind = infer_milestone_kind(parsed, text)
    reading.release = infer_release(parsed.subject, text)
    return reading
