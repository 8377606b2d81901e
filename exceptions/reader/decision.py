"""Phase 5 of reading a thread: the release team's decision, as a *proposal*. Pure.

The decision is the latest line that approves or rejects (deeper quotes are older); its
deadline is the phrase after "deadline ... is", "until" or "by". A conditional ("if the
exception is approved, we merge Monday", "once it is granted") is not a decision.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from exceptions.reader.authors import Authors
from exceptions.reader.messages import HEADER_RE, MD_LINK_RE, Thread
from releasecal import tz

# A release-team decision in a reply, in the wordings release teams use (collected from
# real replies and the handbook; docs/exception-reader.md lists them). Markdown links are
# read as their text first. Rejections are tried first: "has not been approved" is one.
_REQUEST = r"(?:exception(?:\s+request)?|request)"
_BOUNDED_GAP = r"[^.!?\n]{0,80}?"  # "exception for <a few words> has been approved", bounded
_APPROVAL_RES = (
    # "the release team is APPROVING this exception request", "we are approving"
    re.compile(r"\bAPPROVING\b|\b(?:is|are|am|we(?:'re|\s+are)?)\s+approving\b", re.I),
    # "The exception request has been approved", "The exception for additional time for this
    # enhancement has been approved" (the 1.20 meeting notes)
    re.compile(
        rf"\b{_REQUEST}(?:\s+for\s+{_BOUNDED_GAP})?\s+(?:has\s+been|is|was|have\s+been|got)\s+(?:\w+\s+)?approved\b",
        re.I,
    ),
    # "has been accepted by the release team", "accepted by the v1.36 release team"
    re.compile(r"\b(?:approved|accepted)\s+by\s+(?:the\s+)?(?:v?\d\.\d+\s+)?release\s+team\b", re.I),
    re.compile(r"\b(?:we|the\s+release\s+team)\s+(?:have\s+|has\s+|'ve\s+)?(?:approved|granted|accepted)\b", re.I),
    re.compile(r"\bexception\s+(?:is\s+|has\s+been\s+)?granted\b", re.I),
    # "congratulations on your exception request being approved"
    re.compile(rf"\b{_REQUEST}\s+(?:being|getting)\s+(?:approved|accepted|granted)\b", re.I),
    # "We approve this exception", "I'm happy to approve the request"
    re.compile(
        rf"\b(?:we|i)(?:'m|\s+am|\s+are)?\s+(?:happy\s+to\s+|glad\s+to\s+)?approve\s+(?:this|the|your)\s+{_REQUEST}",
        re.I,
    ),
)
_REJECTION_RES = (
    re.compile(r"\bREJECTING\b|\b(?:is|are|am|we(?:'re|\s+are)?)\s+(?:rejecting|denying|declining)\b", re.I),
    re.compile(
        rf"\b{_REQUEST}(?:\s+for\s+{_BOUNDED_GAP})?\s+(?:has\s+been|is|was|have\s+been)\s+(?:\w+\s+)?"
        r"(?:rejected|denied|declined)\b",
        re.I,
    ),
    # "has not been approved", "was not accepted" (not "has not been approved yet": pending)
    re.compile(
        rf"\b{_REQUEST}(?:\s+for\s+{_BOUNDED_GAP})?\s+(?:is|was|has|have)(?:\s+not|n't)\s+(?:been\s+)?"
        r"(?:approved|granted|accepted)\b(?!\s+yet)",
        re.I,
    ),
    re.compile(r"\b(?:rejected|declined|denied)\s+by\s+(?:the\s+)?(?:v?\d\.\d+\s+)?release\s+team\b", re.I),
    re.compile(
        r"\b(?:unable|not\s+able)\s+to\s+(?:approve|grant|accept)\b|\bcan(?:not|'t)\s+(?:approve|grant|accept)\b", re.I
    ),
    re.compile(r"\bwill\s+not\s+be\s+(?:approved|granted|accepted)\b", re.I),
    # "your exception request being rejected", "we have to decline this request"
    re.compile(rf"\b{_REQUEST}\s+(?:being|getting)\s+(?:rejected|declined|denied)\b", re.I),
    re.compile(
        rf"\b(?:we|i)(?:'ll|\s+will)?\s+(?:have\s+to\s+|must\s+)(?:reject|decline|deny)\s+(?:this|the|your)\s+{_REQUEST}",
        re.I,
    ),
)


# "If the exception is approved, ...", "once it is granted": a condition, not a decision.
_CONDITIONAL_RE = re.compile(
    r"\b(?:if|once|when|whether|unless|until|hope|hoping|hopefully|in\s+case|should|would|could|might)\b[^.!?]*$",
    re.I,
)


def decision_outcome(text: str) -> str:
    """ "approved", "rejected" or "" for a line of a release-team reply."""
    plain = MD_LINK_RE.sub(r"\1", text)
    for outcome, regexes in (("rejected", _REJECTION_RES), ("approved", _APPROVAL_RES)):
        for regex in regexes:
            for match in regex.finditer(plain):
                if not _CONDITIONAL_RE.search(plain[: match.start()]):
                    return outcome
    return ""


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


# A newline that is not part of a blank line (the paragraph's lines are right-stripped).
_WRAPPED_RE = re.compile(r"(?<!\n)\n(?!\n)")


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


def read_decision(
    thread: Thread, authors: Authors, *, template_lines: set[int], reference: dt.datetime | None
) -> DecisionReading | None:
    """Phase 5: the latest release-team decision in the thread (deeper quotes are older),
    never read from ``template_lines`` (the template's answers)."""
    lines = thread.lines
    consumed = template_lines
    candidates = [
        ln for ln in lines if ln.index not in consumed and not ln.blank and decision_outcome(ln.text) and not
        HEADER_RE.match(ln.text)
    ]  # fmt: skip
    if not candidates:
        return None
    line = max(candidates, key=lambda ln: (-ln.depth, ln.index))
    outcome = decision_outcome(line.text)
    # The paragraph around the decision line, at its depth.
    own = thread.message_of[line.index]
    start = line.index
    while start > 0 and lines[start - 1].depth == line.depth and not lines[start - 1].blank:
        if HEADER_RE.match(lines[start - 1].text) or thread.message_of[start - 1] != own:
            break
        start -= 1
    end = line.index
    blank_run = 0
    while end + 1 < len(lines) and lines[end + 1].depth == line.depth:
        nxt = lines[end + 1]
        if HEADER_RE.match(nxt.text) or thread.message_of[end + 1] != own:
            break
        blank_run = blank_run + 1 if nxt.blank else 0
        if blank_run >= 2:
            break
        end += 1
    paragraph = "\n".join(ln.text for ln in lines[start : end + 1]).strip()
    found_date = thread.date_of(line)
    sent_at = found_date[1] if found_date else None
    reading = DecisionReading(
        outcome=outcome,
        source_text=paragraph,
        author=authors.of(line).name,
        sent_at=sent_at,
    )
    if outcome != "approved":
        return reading
    plain = MD_LINK_RE.sub(r"\1", paragraph)
    # A sentence the mail client wrapped is one line again ("The new deadline for the\n
    # remaining PR is ..."); a blank line still ends it.
    plain = _WRAPPED_RE.sub(" ", plain)
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
