"""Read a Kubernetes exception request email into fields. Pure: no database.

The template, as the release team publishes it (2024 and 2025 wording)::

    - Enhancement name:
    - Enhancement status (alpha/beta/stable):
    - SIG:
    - k/enhancements repo issue #:
    - PR #'s:                                      (often with a curly apostrophe)
    - Additional time needed (in days):            (2025: "(in calendar days, due end of day AoE)")
    - Reason this enhancement is critical for this milestone:
    - Risks from adding code late: (to k8s stability, testing, etc.)
    - Risks from cutting enhancement: (partial implementation, critical customer usecase, etc.)

People send it with ``*``, ``•`` or ``-`` bullets (or none), bold keys, curly
apostrophes, lower-case keys, the older "Feature ..." wording, Windows line endings,
inside quoted replies (``> ``) and as threads where a later message changes the days
("Updating the time requested to 2 days.").

How a thread is read (documented because it is a heuristic):

- Each line has a quote depth (the number of leading ``>``). A deeper quote is older
  than the text around it (a top-posted reply quotes what it answers); at one depth,
  lower in the text is later (a thread pasted in order).
- Each template field is taken from its oldest copy: the deepest quote, then the first
  line at that depth. That copy's "Additional time needed" is the original request.
- After it, in that order, any other "Additional time needed" line and any sentence
  that changes the days ("Updating the time requested to N days", "update: we need N
  days", "actually 4 days", ...) is an amendment. The same sentence quoted again is
  one amendment; a statement that repeats the current days is no change; statements
  in one message (same depth, no other change between) giving the same days are
  merged into one amendment ("Updating to 2 days." followed by the re-quoted
  "Additional time needed ...: 2").
- The request's ``sent_at`` is the ``Date:`` header of the message that holds the
  original template; an amendment's ``sent_at`` is a later ``Date:`` header at its
  own depth, else None (the caller then uses the request's time).

Zones named in "until ..." are mapped to IANA names. Abbreviations are ambiguous by
nature; the table below picks the meaning Kubernetes contributors use. CET/CEST map to
Europe/Berlin: every country on Central European Time has followed the same EU rules
since 1996, so the choice of city never changes an instant (and the project already
uses Europe/Berlin as its example). IST is India (Asia/Kolkata); CST is read as US
Central, with a warning because it is also China Standard Time.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import email.utils
import html
import re
from dataclasses import asdict, dataclass, field

from exceptions.services import RequestFields
from releasecal import tz

# The template's own wording of each field, for messages; keys are RequestFields names.
FIELD_LABELS: dict[str, str] = {
    "enhancement_name": "Enhancement name",
    "stage": "Enhancement status (alpha/beta/stable)",
    "sig": "SIG",
    "issue_url": "k/enhancements repo issue #",
    "pr_urls": "PR #'s",
    "days": "Additional time needed (in days)",
    "reason": "Reason this enhancement is critical for this milestone",
    "risks_adding": "Risks from adding code late",
    "risks_cutting": "Risks from cutting enhancement",
}

MILESTONE_KIND_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("code-freeze", re.compile(r"\bcode[\s-]*freeze\b", re.I)),
    ("enhancements-freeze", re.compile(r"\benhancements?[\s-]*freeze\b", re.I)),
    ("prr-freeze", re.compile(r"\b(?:prr|production[\s-]+readiness(?:[\s-]+review)?)[\s-]*freeze\b", re.I)),
    ("docs-freeze", re.compile(r"\b(?:docs?|documentation)[\s-]*freeze\b", re.I)),
    ("test-freeze", re.compile(r"\btest[\s-]*freeze\b", re.I)),
]

_STAGES = {"alpha": "alpha", "beta": "beta", "stable": "stable", "ga": "stable", "deprecation": "deprecation"}


@dataclass
class Amendment:
    """A later change of the requested days, in thread order."""

    days: int
    until_text: str = ""
    until_zone: str = ""
    text: str = ""
    sent_at: dt.datetime | None = None

    def as_dict(self) -> dict:
        return {
            "days": self.days,
            "until_text": self.until_text,
            "until_zone": self.until_zone,
            "text": self.text,
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
        }


@dataclass
class ParsedRequest:
    fields: RequestFields
    kep_number: int | None = None
    milestone_kind: str = ""
    subject: str = ""
    amendments: list[Amendment] = field(default_factory=list)
    # RequestFields names of the template fields that could not be read, in template
    # order; ``problems`` says why for each, naming the field as the template does.
    missing: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # From the email headers, when present.
    sent_at: dt.datetime | None = None
    sender: str = ""
    sender_address: str = ""

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
            "fields": fields,
            "amendments": [a.as_dict() for a in self.amendments],
            "missing": list(self.missing),
            "problems": dict(self.problems),
            "warnings": list(self.warnings),
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
            "sender": self.sender,
        }


# ------------------------------------------------------------------------ lines

_QUOTE_RE = re.compile(r"^((?:[ \t]*>)+)[ \t]?")
_BULLET_RE = re.compile(r"^\s*(?:[*\u2022\u2023\u25e6\u25aa\u00b7+\-\u2013\u2014]|\d{1,2}[.)])\s+")
_HEADER_RE = re.compile(r"^\s*(from|date|sent|subject|to|cc|reply-to)\s*:\s*(.*)$", re.I)
_ATTRIBUTION_RE = re.compile(r"^\s*(?:on\s.{4,200}\swrote:|-{3,}\s*(?:original|forwarded)\s+message\s*-{3,})\s*$", re.I)
_SIGNOFF_RE = re.compile(
    r"^\s*(?:(?:thanks?(?: you)?|many thanks|thx|regards|best(?: regards| wishes)?|cheers|kind regards|--|-- )"
    r"\s*[!,.]?\s*$"
    r"|thanks?(?: you)?(?: (?:so much|in advance|for (?:your|the) (?:consideration|review|time|help)|for considering"
    r"(?: (?:this|it))?))[!,. ]*\S{0,40}$|(?:please )?let (?:me|us) know\b|(?:happy|glad) to (?:answer|discuss)\b)",
    re.I,
)
_OPT_PAREN = r"(?:\s*\([^()]*\))*"

_KEY_PATTERNS: list[tuple[str, str]] = [
    ("days", r"(?:(?:additional|extra)\s+(?:time|days?)(?:\s+(?:needed|requested|required))?|time\s+needed"
     r"|days\s+(?:needed|requested))(?:\s+in\s+(?:calendar\s+|business\s+)?days)?"),
    ("reason", r"reason(?:\s+(?:this|the|why)\s+(?:(?:this|the)\s+)?(?:enhancement|feature|kep)\s+is\s+critical"
     r"(?:\s+(?:for|to|in)\s+(?:this|the)\s+(?:milestone|release))?)?"
     r"|why\s+(?:is\s+)?(?:this|it)\s+(?:is\s+)?critical(?:\s+(?:for|to)\s+(?:this|the)\s+(?:milestone|release))?"),
    ("risks_adding", r"risks?\s+(?:from|of|in|with)\s+adding(?:\s+(?:the\s+)?(?:code|enhancement|feature|it))?"
     r"(?:\s+late)?"),
    ("risks_cutting", r"risks?\s+(?:from|of|in|with)\s+cutting(?:\s+(?:the\s+)?(?:enhancement|feature|kep|it))?"),
    ("kep_pr", r"(?:k/enhancements|kubernetes/enhancements|k/e|kep)\s+(?:pr|pull\s+request)s?(?:\s*#|\s+links?)?"),
    ("issue_url", r"(?:(?:k/enhancements|kubernetes/enhancements|k/e|enhancements?|k/features|kubernetes/features"
     r"|features?)\s+(?:repo(?:sitory)?\s+)?"
     r"|(?:feature|kep|tracking)\s+)?issue(?:\s*(?:#|number|no\.?|url|link))?"),
    ("pr_urls", r"prs?\s*#\s*['\u2019\u2018`\u00b4]?\s*s|pr\s*#|prs|pr\s+(?:links?|urls?|numbers?)"
     r"|pull\s+requests?(?:\s+(?:links?|urls?))?|related\s+prs|prs?"),
    ("stage", r"(?:enhancement|feature|kep)\s+(?:status|stage)|stage|status|maturity(?:\s+level)?"),
    ("sig", r"(?:owning\s+|responsible\s+|lead\s+)?sigs?"),
    ("enhancement_name", r"(?:enhancement|feature|kep)\s+(?:name|title)|name|title"),
]  # fmt: skip
_KEY_RES = [
    (name, re.compile(rf"^(?:{pattern})[*_]*{_OPT_PAREN}[*_]*\s*[:\uff1a][*_]*\s*(?P<rest>.*)$", re.I))
    for name, pattern in _KEY_PATTERNS
]
# The template's own hints: never an answer, wherever they are left ("(hint)" after the
# key, or copied on a line of its own).
_PROMPT_RE = re.compile(
    r"^(?:\((?:[^()]*(?:k8s|kubernetes)\s+stability[^()]*|[^()]*partial\s+implementation[^()]*"
    r"|[^()]*\betc\.?|alpha\s*/\s*beta\s*/\s*stable|in\s+(?:calendar\s+)?days(?:,[^()\n]*)?)\)"
    r"|alpha\s*/\s*beta\s*/\s*stable\s*$)\s*[:\-\u2013]?\s*",
    re.I,
)
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)[\w-]*\s*$")

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|a\\s+couple\\s+of"
)
_DAY_UNIT = r"(?:(?:more|additional|extra|calendar|business|working)\s+)*days?\b"
_CHANGE_VERBS = (
    r"updat(?:e|ed|ing)|chang(?:e|ed|ing)|revis(?:e|ed|ing)|amend(?:ed|ing)?|reduc(?:e|ed|ing)|increas(?:e|ed|ing)"
    r"|lower(?:ed|ing)?|bump(?:ed|ing)?|adjust(?:ed|ing)?|correct(?:ed|ing|ion)?"
)
# Most specific first: "from 6 days to 4 days" is 4; "4 days instead of 6" is 4.
_AMEND_RES = [
    re.compile(rf"\b(?:{_CHANGE_VERBS})\b[^.\n]{{0,80}}?\bto\s+(?:only\s+|just\s+)?(?P<days>\d+)\s*{_DAY_UNIT}", re.I),
    re.compile(rf"(?<![\d.])\b(?P<days>\d+)\s*{_DAY_UNIT}\s*instead\b", re.I),
    re.compile(rf"\b(?:{_CHANGE_VERBS})\b[^.\n]{{0,80}}?(?<![\d.])\b(?P<days>\d+)\s*{_DAY_UNIT}", re.I),
    re.compile(rf"\b(?:actually|now|only)\b[^.\n]{{0,40}}?(?<![\d.])\b(?P<days>\d+)\s*{_DAY_UNIT}", re.I),
]
# A release-team decision ("approved, you now have 3 days") is not the requester's change;
# it only guards the weakest pattern (no change verb).
_DECISION_RE = re.compile(r"\b(?:approved|granted|rejected|denied|declined)\b", re.I)
_AMEND_WORDS_RE = re.compile(
    rf"\b(?:{_CHANGE_VERBS}|actually|instead|now|only)\b[^.\n]{{0,80}}?\b(?P<word>{_NUMBER_WORDS})\s+{_DAY_UNIT}", re.I
)


@dataclass
class _Line:
    index: int
    depth: int
    text: str  # without quote markers; trailing whitespace removed

    @property
    def blank(self) -> bool:
        return not self.text.strip()


@dataclass
class _Occurrence:
    name: str
    line: _Line
    value: str
    end: int  # index of the last line consumed

    @property
    def key(self) -> tuple[int, int]:
        """Thread order: deeper quotes are older, then top to bottom."""
        return (-self.line.depth, self.line.index)


def _split_lines(text: str) -> list[_Line]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\u200b", "").replace("\ufeff", "").replace("\t", "    ")
    lines = []
    for index, raw in enumerate(text.split("\n")):
        match = _QUOTE_RE.match(raw)
        depth = match.group(1).count(">") if match else 0
        body = raw[match.end() :] if match else raw
        if _FENCE_RE.match(body):
            body = ""  # a code fence around the template is layout, not text
        lines.append(_Line(index=index, depth=depth, text=body.rstrip()))
    return lines


def _strip_bullet(text: str) -> str:
    text = _BULLET_RE.sub("", text, count=1)
    # Bold keys: "**SIG:** node", and "*SIG:* node" as mail clients render HTML bold.
    return re.sub(r"^[*_]+", "", text.replace("**", "").replace("__", "").strip()).strip()


def _match_key(line: _Line) -> tuple[str, str] | None:
    if line.blank:
        return None
    bare = _strip_bullet(line.text)
    for name, regex in _KEY_RES:
        match = regex.match(bare)
        if match:
            return name, match["rest"].strip()
    return None


def _amendment_match(text: str) -> re.Match[str] | None:
    for regex in _AMEND_RES:
        match = regex.search(text)
        if match and not (regex is _AMEND_RES[-1] and _DECISION_RE.search(text)):
            return match
    return None


def _is_amendment_line(text: str) -> bool:
    return bool(_amendment_match(text) or _AMEND_WORDS_RE.search(text))


def _stops_value(lines: list[_Line], i: int) -> bool:
    line = lines[i]
    return bool(
        _match_key(line)
        or _wrapped_key_match(lines, i)
        or _HEADER_RE.match(line.text)
        or _ATTRIBUTION_RE.match(line.text)
        or _SIGNOFF_RE.match(line.text)
        or _is_amendment_line(line.text)
        or decision_outcome(line.text)
    )


# A release-team decision in a reply. Markdown links are read as their text first.
_APPROVAL_RES = (
    re.compile(r"\bAPPROVING\b|\b(?:is|are|am|we(?:'re|\s+are)?)\s+approving\b", re.I),
    re.compile(
        r"\b(?:exception(?:\s+request)?|request)\s+(?:has\s+been|is|was|have\s+been)\s+(?:\w+\s+)?approved\b", re.I
    ),
    re.compile(r"\bapproved\s+by\s+(?:the\s+)?(?:v?\d\.\d+\s+)?release\s+team\b", re.I),
    re.compile(r"\b(?:we|the\s+release\s+team)\s+(?:have\s+|has\s+)?(?:approved|granted)\b", re.I),
    re.compile(r"\bexception\s+(?:is\s+|has\s+been\s+)?granted\b", re.I),
)
_REJECTION_RES = (
    re.compile(r"\bREJECTING\b|\b(?:is|are|am|we(?:'re|\s+are)?)\s+(?:rejecting|denying|declining)\b", re.I),
    re.compile(
        r"\b(?:exception(?:\s+request)?|request)\s+(?:has\s+been|is|was|have\s+been)\s+(?:\w+\s+)?"
        r"(?:rejected|denied|declined)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:unable|not\s+able)\s+to\s+(?:approve|grant|accept)\b|\bcan(?:not|'t)\s+(?:approve|grant)\b", re.I
    ),
    re.compile(r"\bwill\s+not\s+be\s+(?:approved|granted)\b", re.I),
)
# A Markdown link, [text](url). Neither part may hold the other's opening bracket, so a
# failed match ends at the next "[" or "(": linear time on hostile text ("[" * 50,000 took
# 35 s when the text could hold "[" and the address "(").
_MD_LINK_RE = re.compile(r"\[([^\[\]\n]+)\]\([^()\s]+\)")


# "If the exception is approved, ...", "once it is granted": a condition, not a decision.
_CONDITIONAL_RE = re.compile(
    r"\b(?:if|once|when|whether|unless|until|hope|hoping|hopefully|in\s+case|should|would|could|might)\b[^.!?]*$",
    re.I,
)


def decision_outcome(text: str) -> str:
    """ "approved", "rejected" or "" for a line of a release-team reply."""
    plain = _MD_LINK_RE.sub(r"\1", text)
    for outcome, regexes in (("rejected", _REJECTION_RES), ("approved", _APPROVAL_RES)):
        for regex in regexes:
            for match in regex.finditer(plain):
                if not _CONDITIONAL_RE.search(plain[: match.start()]):
                    return outcome
    return ""


def _wrapped_key_match(lines: list[_Line], i: int) -> tuple[_Line, tuple[str, str]] | None:
    """A key the mail client wrapped inside its parenthesis, read as one line:
    "Additional time needed (in calendar days, due end of day" / "AoE): 3"."""
    line = lines[i]
    if not (
        i + 1 < len(lines)
        and lines[i + 1].depth == line.depth
        and not lines[i + 1].blank
        and line.text.count("(") > line.text.count(")")
        and len(line.text) >= 40
    ):
        return None
    joined = _Line(index=i, depth=line.depth, text=f"{line.text} {lines[i + 1].text.strip()}")
    matched = _match_key(joined)
    return (joined, matched) if matched else None


def _collect_value(lines: list[_Line], start: int, first: str) -> tuple[str, int]:
    """The answer on the key's line plus every following line at the same quote depth,
    until the next template key (or a header, a quote attribution, a sign-off, a
    change of the days, a release-team decision). Blank lines and the template's
    "(hint)" in between do not end it: answers start in the paragraph after the key
    and run over several paragraphs. Trailing blank lines are not part of it.
    """
    depth = lines[start].depth
    first = _PROMPT_RE.sub("", first.strip(), count=1).strip()
    parts = [first] if first else []
    end = start
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.depth != depth:
            break
        if line.blank:
            if parts:
                parts.append("")
            i += 1
            continue
        if _stops_value(lines, i):
            break
        text = line.text.strip()
        if not parts:
            text = _PROMPT_RE.sub("", text, count=1).strip()
            if not text:
                end = i
                i += 1
                continue
        parts.append(text)
        end = i
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(parts)).strip(), end


# ---------------------------------------------------------------------- values


_PROSE_FIELDS = frozenset({"reason", "risks_adding", "risks_cutting"})


def _clean_answer(value: str, name: str) -> str:
    """Drop the template's prompt; short answers wrapped by the mail client become one line."""
    value = _PROMPT_RE.sub("", value.strip(), count=1).strip()
    return value if name in _PROSE_FIELDS else " ".join(value.split())


_MONTHS = r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"  # noqa: E501
_WEEKDAYS = r"mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?"
_TIMEISH_RE = re.compile(
    rf"\b(?:{_WEEKDAYS}|{_MONTHS}|eod|end\s+of\s+(?:the\s+)?day|\d{{1,2}}:\d{{2}}|noon|midnight)\b", re.I
)


_UNTIL_WORDS = (r"until|till|til", r"through|thru|ending", r"due(?:\s+by)?", r"by")


def _read_until(value: str) -> str:
    """The "until ..." of an answer, as written: "EOD Friday CET".

    "until" wins over weaker words ("by"), and the words right after the keyword must
    look like a time, so "blocked by the review ... by EOD Friday" gives "EOD Friday".
    """
    until = ""
    for words in _UNTIL_WORDS:
        for match in re.finditer(rf"\b(?:{words})\b\s+(?=(?P<until>[^\n]+))", value, re.I):
            start = match["until"][:40]
            if _TIMEISH_RE.search(start) or tz.zone_from_text(start)[0]:
                until = match["until"]
                break
        if until:
            break
    if not until:
        for paren in re.finditer(r"\(([^()]*)\)", value):
            if _TIMEISH_RE.search(paren.group(1)):
                until = paren.group(1)
                break
    until = until.strip()
    # Drop the closing parenthesis of "(until EOD Friday CET)" and trailing punctuation.
    if until.count(")") > until.count("("):
        until = until[: until.rfind(")")]
    return until.strip().rstrip(".;,").strip()


# "None, PRR is approved", "0", "No additional time": admission only (0 days).
ADMISSION_RE = re.compile(
    r"^\s*(?:none\b|n/a\b|0\b(?!\s*[.,]\d)|zero\b|no\s+(?:additional|extra|more)\s+(?:time|days?)\b"
    r"|not\s+needed\b|nothing\b)",
    re.I,
)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def read_days(value: str) -> tuple[int | None, str, list[str]]:
    """Days from an "Additional time needed" answer: (days, problem, warnings)."""
    warnings: list[str] = []
    text = value.strip()
    if not text:
        return None, "the answer is empty", warnings
    huge = re.search(r"\d{5,}", text)
    if huge:
        digits = len(huge.group(0))
        return None, f"a {digits:,}-digit number is not a number of days", warnings
    if ADMISSION_RE.match(text):
        warnings.append(f"{_short(text)!r} asks for no extra time: read as 0 days, an admission past the freeze.")
        return 0, "", warnings
    head = re.sub(r"\([^()]*\)", " ", text)  # parentheses hold "until ...", not the count
    ranged = re.search(rf"\b(\d+)\s*(?:-|\u2013|to|or)\s*(\d+)\s*{_DAY_UNIT}", head, re.I)
    if ranged:
        return None, f"{text!r} is a range; give one number of days", warnings
    fraction = re.search(rf"\b(\d+)[.,](\d+)\s*{_DAY_UNIT}", head, re.I)
    if fraction:
        days = int(fraction.group(1)) + 1
        warnings.append(f"{text!r} is not a whole number of days; read as {days}.")
        return days, "", warnings
    # "N days" outside parentheses, else inside them ("until 26 July (3 days)").
    match = re.search(rf"\b(\d+)\s*{_DAY_UNIT}", head, re.I) or re.search(rf"\b(\d+)\s*{_DAY_UNIT}", text, re.I)
    if match:
        if re.search(r"\b(?:business|working)\s+days?\b", match.group(0), re.I):
            warnings.append(f"{text!r}: business days are counted here as calendar days.")
        return int(match.group(1)), "", warnings
    weeks = re.search(r"\b(\d+)\s*weeks?\b", head, re.I)
    if weeks:
        days = int(weeks.group(1)) * 7
        warnings.append(f"{text!r} read as {days} days.")
        return days, "", warnings
    hours = re.search(r"\b(\d+)\s*(?:hours?|hrs?|h)\b", head, re.I)
    if hours:
        days = max(1, -(-int(hours.group(1)) // 24))
        warnings.append(f"{text!r} read as {days} day(s).")
        return days, "", warnings
    leading = re.match(
        rf"^\s*(?:~|\u2248|about|approx\.?|approximately|around)?\s*(\d+)\b(?!\s*(?:{_MONTHS}|[:/.]\d))", head, re.I
    )
    if leading:
        return int(leading.group(1)), "", warnings
    word = re.search(rf"\b({_NUMBER_WORDS})\b", text, re.I)
    if word:
        return (
            None,
            f"{word.group(1)!r} is not written in digits; write the number of days as digits (e.g. 7)",
            warnings,
        )
    return None, f"no number of days in {text!r}", warnings


_QUOTED_NAME_RE = re.compile(
    r"^[\"\u201c\u2018'`*_]+(?P<name>.+?)[\"\u201d\u2019'`*_]+\s*[(<\[:\-\u2013,]*\s*(?P<rest>.*)$", re.S
)


def _rstrip_punctuation(text: str) -> str:
    """``text`` without its trailing blanks and ( < [ ] > ) : - , or an en dash (a loop, not a
    pattern anchored at $: that is tried at every position of a long run, quadratic)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in "(<[]>):-\u2013,"):
        end -= 1
    return text[:end]


def read_enhancement_name(value: str) -> tuple[str, str]:
    """(name, url): a quoted name followed by its link ("\"Pod resize\" https://...") gives
    the name without quotes and the link; a name with a link after it, likewise."""
    text = " ".join(value.split())
    text = _MD_LINK_RE.sub(lambda m: f"{m.group(1)} {m.group(0)[m.group(0).index('(') + 1 : -1]}", text)
    url = ""
    urls = _URL_RE.findall(text)
    if urls:
        url = _clean_url(urls[0])
    quoted = _QUOTED_NAME_RE.match(text)
    if quoted and (not quoted["rest"] or _URL_RE.search(quoted["rest"]) or len(quoted["rest"]) < 3):
        return quoted["name"].strip(), url
    if url:
        name = _URL_RE.sub(" ", text)
        name = _rstrip_punctuation(name).strip()
        name = re.sub(r"\(\s*\)|<\s*>", "", name).strip()
        return name, url
    return text, url


def read_stage(value: str) -> tuple[str, str]:
    """(stage, problem)."""
    text = value.strip().lower()
    if not text:
        return "", "the answer is empty"
    words = r"alpha|beta|stable|ga|deprecat\w*"
    target = re.search(rf"(?:->|\u2192|=>|\bto\b)\s*({words})\b", text)
    found = target or re.search(rf"\b({words})\b", text)
    if not found:
        return "", f"{value.strip()!r} is not one of alpha, beta, stable"
    word = found.group(1)
    return ("deprecation" if word.startswith("deprecat") else _STAGES[word]), ""


def read_sig(value: str) -> tuple[str, str, list[str]]:
    """(sig slug, problem, warnings): "SIG Node" and "sig-node" are "node"."""
    text = re.sub(r"https?://\S+", " ", value).strip()
    text = re.sub(r"@kubernetes/", "", text, flags=re.I)
    parts = [p.strip() for p in re.split(r",|/|;|&|\band\b|\n|\(|\)", text) if p.strip()]
    slugs = []
    for part in parts:
        slug = re.sub(r"^sig[\s_-]*", "", part.lower())
        slug = re.sub(r"-(?:pr-reviews|bugs|feature-requests|misc|api-reviews)$", "", slug)
        slug = re.sub(r"[\s_]+", "-", slug).strip("-.")
        if slug and re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", slug) and slug not in {"lead", "leads", "owner"}:
            slugs.append(slug)
    if not slugs:
        return "", f"no SIG name in {value.strip()!r}" if value.strip() else "the answer is empty", []
    warnings = []
    if len(slugs) > 1:
        warnings.append(f"Several SIGs named ({', '.join(slugs)}); {slugs[0]} was taken as the owning SIG.")
    return slugs[0], "", warnings


_URL_RE = re.compile(r"https?://[^\s<>()\[\],;\"'`]+")
# kubernetes/features was renamed kubernetes/enhancements (2018): its issue numbers are the KEPs'.
_ENHANCEMENTS_ISSUE_RE = re.compile(r"github\.com/kubernetes/(?:enhancements|features)/issues/(\d+)", re.I)


def _clean_url(url: str) -> str:
    return url.rstrip(".,;:!?)>]'\"")


def read_issue(value: str) -> tuple[str, int | None, str, list[str]]:
    """(issue_url, kep_number, problem, warnings)."""
    text = value.strip()
    if not text:
        return "", None, "the answer is empty", []
    warnings = []
    urls = [_clean_url(u) for u in _URL_RE.findall(text)]
    number = None
    if urls:
        issue = _ENHANCEMENTS_ISSUE_RE.search(urls[0])
        if issue:
            number = int(issue.group(1))
        else:
            warnings.append(f"The issue link {urls[0]} is not a kubernetes/enhancements issue.")
        bare = re.search(r"(?<![/\w])#?(\d{2,6})\b", _URL_RE.sub(" ", text))
        if bare and number is not None and int(bare.group(1)) != number:
            warnings.append(f"The issue number {bare.group(1)} and the link {urls[0]} disagree; the link was kept.")
        elif bare and number is None and issue is None:
            number = None
        return urls[0], number, "", warnings
    shorthand = re.search(
        r"(?:kubernetes/(?:enhancements|features)|k/(?:enhancements|features)|k/e)\s*#\s*(\d+)|^#?\s*(\d{1,6})\b",
        text,
        re.I,
    )
    if shorthand:
        number = int(shorthand.group(1) or shorthand.group(2))
        return f"https://github.com/kubernetes/enhancements/issues/{number}", number, "", warnings
    return "", None, f"no issue number or link in {text!r}", warnings


def read_prs(value: str) -> tuple[list[str], str, list[str]]:
    """(PR references as written, problem, warnings). Bare numbers stay ``#N``."""
    text = value.strip()
    if not text:
        return [], "the answer is empty", []
    found: list[tuple[int, str]] = []
    warnings: list[str] = []

    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    for match in _URL_RE.finditer(text):
        found.append((match.start(), _clean_url(match.group(0))))
    rest = _URL_RE.sub(blank, text)
    # Each match starts where a run of [\w.-] starts, and whitespace is read only after
    # a "#": tried inside long runs, both took quadratic time on hostile text.
    shorthand = re.compile(r"(?<![\w.-])[.-]*(\w[\w.-]*/[\w.-]+)\s*#\s*(\d+)\b")
    for match in shorthand.finditer(rest):
        found.append((match.start(), f"{match.group(1)}#{match.group(2)}"))
    rest = shorthand.sub(blank, rest)
    bare = [(m.start(), f"#{m.group(1)}") for m in re.finditer(r"(?<![\w/])(?:#\s*)?(\d{3,7})\b", rest)]
    if bare:
        numbers = ", ".join(ref for _, ref in bare)
        warnings.append(f"PR number(s) {numbers} are written without a repository; they are kept as written.")
        found.extend(bare)
    refs = [ref for _, ref in sorted(found)]
    refs = list(dict.fromkeys(refs))
    if not refs:
        if re.search(r"\b(?:n/?a|none|tbd|no\s+prs?|not\s+yet|pending|todo|-)\b|^-$", text, re.I):
            return [], "", [f"No PR yet ({text!r})."]
        return [], f"no PR link or number in {text!r}", warnings
    return refs, "", warnings


def _parse_date(value: str) -> dt.datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value.strip())
        if parsed is None:
            return None
        if parsed.tzinfo is None:  # "-0000": the time is UTC, the sender's zone unknown (RFC 5322)
            parsed = parsed.replace(tzinfo=dt.UTC)
        return tz.to_utc(parsed)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # year 1 at a negative offset overflows; the reader refuses such dates


# RFC 5322 caps a line at 998 characters. The standard library's address parser takes
# quadratic time on a longer hostile value (7 s on 50,000 "@") and recurses past Python's
# limit on nested ones (":<" * 2,000 raised RecursionError).
_ADDRESS_MAX = 998


def parse_address(value: str) -> tuple[str, str]:
    """``email.utils.parseaddr``, bounded: (display name, address); ("", "") when the value
    nests too deep to read."""
    try:
        return email.utils.parseaddr(value[:_ADDRESS_MAX])
    except RecursionError:
        return "", ""


def display_name(value: str) -> str:
    """The person in a From: value; Google Groups' "'Name' via kubernetes-sig-release" is Name."""
    if "@" in value or "<" in value:
        display, address = parse_address(value)
        name = display or address or value.strip()
    else:
        name = value.strip().strip("\"'")
    name = " ".join(name.split())  # one space between words: the pattern below is linear then
    via = re.match(r"^'?(?P<name>.+?)'? via \S.*$", name)
    return (via["name"] if via else name).strip()


def author_before(lines: list[_Line], line: _Line) -> str:
    """Who wrote ``line``: the nearest From: header above it at its depth, else the
    "On ..., NAME <addr> wrote:" line that introduces its quote."""
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        if other.depth == line.depth:
            header = _HEADER_RE.match(other.text)
            if header and header.group(1).lower() == "from":
                return display_name(header.group(2))
        elif other.depth < line.depth:
            who = attribution_name(other.text)
            if who:
                return who
            if other.text.strip():
                break
    return ""


def _address_before(lines: list[_Line], line: _Line) -> str:
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        header = _HEADER_RE.match(other.text) if other.depth == line.depth else None
        if header and header.group(1).lower() == "from":
            return parse_address(header.group(2))[1]
        if other.depth < line.depth and other.text.strip():
            address = re.search(r"<([^<>@\s]+@[^<>\s]+)>\s*wrote:\s*$", other.text)
            return address.group(1) if address else ""
    return ""


def attribution_name(text: str) -> str:
    """The name in "On Tue, Jul 23, 2024 at 8:10 PM Jane Doe <jane@example.com> wrote:"."""
    # Whitespace collapsed first: "\s*" beside a lazy ".+?" is quadratic on long blanks.
    match = re.match(r"^on (?P<body>.+?) ?wrote: ?$", " ".join(text.split()), re.I)
    if not match:
        return ""
    body = re.sub(r" ?(?:<[^<>]*>|\([^()]*\))$", "", match["body"])
    stamps = re.finditer(r"\b(?:[AP]M|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[+-]\d{4})?|\d{4})\b,?", body, re.I)
    cut = max((stamp.end() for stamp in stamps), default=0)
    name = body[cut:].strip(" ,")
    return display_name(name) if name and len(name) <= 100 else ""


def _kep_from_text(text: str) -> int | None:
    match = re.search(r"\bKEP[\s_#:-]*(\d{1,6})\b", text, re.I)
    return int(match.group(1)) if match else None


def guess_milestone_kind(*texts: str) -> tuple[str, str]:
    """The freeze the texts name: (slug, warning). Tried in order; "" if none or several."""
    for text in texts:
        found = []
        for slug, regex in MILESTONE_KIND_PATTERNS:
            match = regex.search(text)
            if match:
                found.append((match.start(), slug))
        kinds = [slug for _, slug in sorted(found)]
        if len(kinds) == 1:
            return kinds[0], ""
        if len(kinds) > 1:
            return "", f"The text names several freezes ({', '.join(kinds)}); say which one with --milestone."
    return "", ""


# ------------------------------------------------------------------------ parse


@dataclass
class _Signal:
    line: _Line
    days: int
    until_text: str
    until_zone: str
    text: str

    @property
    def key(self) -> tuple[int, int]:
        return (-self.line.depth, self.line.index)


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", _strip_bullet(text)).strip().lower()


def _date_before(lines: list[_Line], line: _Line) -> tuple[int, dt.datetime | None] | None:
    """The nearest ``Date:`` header above ``line`` at its depth: (index, instant)."""
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        if other.depth != line.depth:
            continue
        header = _HEADER_RE.match(other.text)
        if header and header.group(1).lower() in {"date", "sent"}:
            return i, _parse_date(header.group(2))
    return None


_MIME_HEADER_RE = re.compile(r"^(?:mime-version|content-type|content-transfer-encoding)\s*:", re.I | re.M)


def _html_to_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style)\b.*?</\1>", "", markup)
    markup = re.sub(r"(?i)<li\b[^>]*>", "\n* ", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</(?:p|div|li|tr|h\d)>", "\n", markup)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def unwrap_mime(text: str) -> str:
    """A raw message (``.eml`` with MIME headers) as readable text; other text unchanged.

    Quoted-printable and base64 bodies and encoded subjects are decoded; the text part
    is preferred, an HTML-only message is reduced to its text. Subject, From and Date
    are kept as header lines on top so the parser reads them like a pasted email.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    header_block = normalized.lstrip().split("\n\n", 1)[0]
    if not _MIME_HEADER_RE.search(header_block):
        return text
    try:
        message = email.message_from_string(normalized.lstrip(), policy=email.policy.default)
        part = message.get_body(preferencelist=("plain", "html"))
        content = part.get_content() if part is not None else ""
        if part is not None and part.get_content_type() == "text/html":
            content = _html_to_text(content)
        headers = [f"{name}: {message[name]}" for name in ("From", "Date", "Subject") if message[name]]
    except (LookupError, ValueError, TypeError, AttributeError):
        return text
    return "\n".join(headers) + "\n\n" + str(content)


def parse_request_email(text: str) -> ParsedRequest:
    """Read a request email (or a pasted thread) into fields, amendments and problems.

    ``text`` is what a person pastes, or a raw message with MIME headers (decoded first;
    ``fields.source_text`` then holds the decoded text).
    """
    text = unwrap_mime(text or "")
    lines = _split_lines(text)
    warnings: list[str] = []

    # Headers: the first Subject/From anywhere, top block first.
    subject = sender = sender_address = ""
    for line in lines:
        header = _HEADER_RE.match(line.text)
        if not header:
            continue
        name, value = header.group(1).lower(), header.group(2).strip()
        if name == "subject" and not subject:
            subject = value
        elif name == "from" and not sender:
            sender = display_name(value)
            sender_address = parse_address(value)[1]
    if not subject:
        for line in [ln for ln in lines if not ln.blank][:3]:
            if line.depth == 0 and not _match_key(line) and re.search(r"exception|\bKEP\b|freeze", line.text, re.I):
                subject = line.text.strip()
                break

    # Every template field line, with its answer.
    occurrences: list[_Occurrence] = []
    consumed: set[int] = set()
    i = 0
    while i < len(lines):
        key_line, key_end = lines[i], i
        matched = _match_key(key_line)
        wrapped = None if matched else _wrapped_key_match(lines, i)
        if wrapped:
            (key_line, matched), key_end = wrapped, i + 1
        if matched:
            name, first = matched
            value, end = _collect_value(lines, key_end, first)
            occurrences.append(_Occurrence(name=name, line=key_line, value=value, end=end))
            consumed.update(range(i, end + 1))
            i = end + 1
        else:
            i += 1

    chosen: dict[str, _Occurrence] = {}
    for occ in occurrences:
        best = chosen.get(occ.name)
        if best is None or occ.key < best.key:
            chosen[occ.name] = occ

    problems: dict[str, str] = {}
    values = {name: _clean_answer(occ.value, name) for name, occ in chosen.items()}

    enhancement_name, name_url = read_enhancement_name(values.get("enhancement_name", ""))
    if "enhancement_name" in chosen and not enhancement_name:
        problems["enhancement_name"] = "the answer is empty"

    stage = ""
    if "stage" in chosen:
        stage, problem = read_stage(values["stage"])
        if problem:
            problems["stage"] = problem

    sig = ""
    if "sig" in chosen:
        sig, problem, more = read_sig(values["sig"])
        warnings += more
        if problem:
            problems["sig"] = problem

    issue_url, kep_number = "", None
    if "issue_url" in chosen:
        issue_url, kep_number, problem, more = read_issue(values["issue_url"])
        warnings += more
        if problem:
            problems["issue_url"] = problem
    if not issue_url and name_url and _ENHANCEMENTS_ISSUE_RE.search(name_url):
        issue_url, kep_number = name_url, int(_ENHANCEMENTS_ISSUE_RE.search(name_url).group(1))
        problems.pop("issue_url", None)
        chosen.setdefault("issue_url", chosen["enhancement_name"])
        warnings.append(f"The enhancements issue was read from the link after the name: {name_url}.")

    pr_urls: list[str] = []
    if "pr_urls" in chosen:
        pr_urls, problem, more = read_prs(values["pr_urls"])
        warnings += more
        if problem:
            problems["pr_urls"] = problem
    if "kep_pr" in chosen:
        # "k/enhancements PR:" gives the KEP's pull request instead of its issue.
        kep_prs, _, _ = read_prs(values["kep_pr"])
        pr_urls = list(dict.fromkeys([*pr_urls, *kep_prs]))
        if "pr_urls" not in chosen and pr_urls:
            chosen["pr_urls"] = chosen["kep_pr"]
            problems.pop("pr_urls", None)
        if "issue_url" not in chosen:
            warnings.append(
                "The KEP's k/enhancements pull request was given instead of its issue; "
                "the KEP number comes from the subject or the text."
            )

    days, until_text, until_zone = None, "", ""
    base = chosen.get("days")
    if base is not None:
        days, problem, more = read_days(values["days"])
        warnings += more
        if problem:
            problems["days"] = problem
        until_text, until_zone, more = _until(base, values["days"])
        warnings += more

    for name in ("reason", "risks_adding", "risks_cutting"):
        if name in chosen and not values[name]:
            problems[name] = "the answer is empty"

    for name, label in FIELD_LABELS.items():
        if name not in chosen:
            problems[name] = f'the "{label}:" line is not in the email'
    ordered_problems = {name: problems[name] for name in FIELD_LABELS if name in problems}
    missing = list(ordered_problems)

    # The KEP: the enhancements issue, else the subject, else the first "KEP-N" in the text.
    subject_kep = _kep_from_text(subject)
    if kep_number is None:
        kep_number = subject_kep or _kep_from_text(enhancement_name) or _kep_from_text(text or "")
    elif subject_kep is not None and subject_kep != kep_number:
        warnings.append(f"The subject names KEP-{subject_kep} but the issue is #{kep_number}; the issue was used.")
    if kep_number is None:
        problems.setdefault("kep_number", "no KEP number: no enhancements issue and no KEP-NNNN in the subject")
    elif not issue_url and "issue_url" in problems and "kep_pr" in chosen:
        issue_url = f"https://github.com/kubernetes/enhancements/issues/{kep_number}"
        problems.pop("issue_url")
        missing.remove("issue_url")
        ordered_problems.pop("issue_url", None)

    # The freeze: the subject, then the free text, then the answers.
    free = "\n".join(ln.text for ln in lines if ln.index not in consumed and not _HEADER_RE.match(ln.text))
    answers = "\n".join(values.get(n, "") for n in ("reason", "risks_adding", "risks_cutting", "enhancement_name"))
    milestone_kind, warning = guess_milestone_kind(subject, free, answers)
    if warning:
        warnings.append(warning)

    sent_at = None
    top_date = None
    for line in lines:
        header = _HEADER_RE.match(line.text)
        if header and header.group(1).lower() in {"date", "sent"}:
            top_date = (line, _parse_date(header.group(2)))
            break
    base_date = _date_before(lines, base.line) if base is not None else None
    if base is not None:
        # The requester is whoever wrote the message holding the template (a top-posted
        # reply's From: is the replier's).
        author = author_before(lines, base.line)
        if author and author != sender:
            sender, sender_address = author, _address_before(lines, base.line)
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

    amendments: list[Amendment] = []
    if base is not None and days is not None:
        amendments = _amendments(lines, occurrences, base, consumed, days, until_text, until_zone, warnings, base_date)

    fields = RequestFields(
        days=days or 0,
        enhancement_name=enhancement_name,
        stage=stage,
        sig=sig,
        issue_url=issue_url,
        pr_urls=pr_urls,
        until_text=until_text,
        until_zone=until_zone,
        reason=values.get("reason", ""),
        risks_adding=values.get("risks_adding", ""),
        risks_cutting=values.get("risks_cutting", ""),
        source_text=text or "",
    )
    _fit_lengths(fields, warnings)
    if "kep_number" in problems:
        ordered_problems["kep_number"] = problems["kep_number"]
    return ParsedRequest(
        fields=fields,
        kep_number=kep_number,
        milestone_kind=milestone_kind,
        subject=subject,
        amendments=amendments,
        missing=missing,
        problems=ordered_problems,
        warnings=list(dict.fromkeys(warnings)),
        sent_at=sent_at,
        sender=sender,
        sender_address=sender_address,
    )


# The column sizes of ExceptionRequestRevision: longer text is cut (with a warning)
# rather than failing in the database.
_LENGTH_LIMITS = {"enhancement_name": 300, "sig": 64, "issue_url": 500, "until_text": 200}


def _fit_lengths(fields: RequestFields, warnings: list[str]) -> None:
    for name, limit in _LENGTH_LIMITS.items():
        value = getattr(fields, name)
        if len(value) > limit:
            setattr(fields, name, value[:limit])
            label = FIELD_LABELS.get(name, "The 'until' text")
            warnings.append(f"{label} is longer than {limit} characters; it was cut.")


def _until(occ: _Occurrence, value: str) -> tuple[str, str, list[str]]:
    """(until_text, until_zone, warnings) for one "Additional time needed" line."""
    until_text = _read_until(value)
    zone, warnings = tz.zone_from_text(until_text or value)
    if not zone:
        # 2025 wording: "Additional time needed (in calendar days, due end of day AoE)".
        key_line = _strip_bullet(occ.line.text)
        key_part = key_line.split(":", 1)[0] if ":" in key_line else key_line
        if re.search(r"\bAoE\b|anywhere\s+on\s+earth", key_part, re.I):
            zone = tz.AOE
    return until_text, zone, warnings


def _amendments(
    lines: list[_Line],
    occurrences: list[_Occurrence],
    base: _Occurrence,
    consumed: set[int],
    days: int,
    until_text: str,
    until_zone: str,
    warnings: list[str],
    base_date,
) -> list[Amendment]:
    base_text = _normalized(base.line.text)
    signals: dict[str, _Signal] = {}

    def add(signal: _Signal) -> None:
        if signal.key <= base.key:
            return  # before the request in the thread (a greeting, an older copy)
        norm = _normalized(signal.text)
        if norm == base_text:
            return  # the request's own line, quoted again
        known = signals.get(norm)
        if known is None or signal.key < known.key:
            signals[norm] = signal

    for occ in occurrences:
        if occ.name != "days" or occ is base:
            continue
        value = _clean_answer(occ.value, "days")
        got, problem, more = read_days(value)
        if got is None:
            warnings.append(f"A later 'Additional time needed' line could not be read ({problem}); it was ignored.")
            continue
        warnings.extend(more)
        u_text, u_zone, more = _until(occ, value)
        warnings.extend(more)
        add(_Signal(line=occ.line, days=got, until_text=u_text, until_zone=u_zone, text=occ.line.text.strip()))

    for line in lines:
        if line.index in consumed or line.blank or _HEADER_RE.match(line.text):
            continue
        match = _amendment_match(line.text)
        if match:
            rest = line.text[match.end() :]
            u_text = _read_until(rest)
            u_zone, more = tz.zone_from_text(u_text or rest)
            warnings.extend(more)
            add(_Signal(line, int(match["days"]), u_text, u_zone, line.text.strip()))
        elif _is_amendment_line(line.text) and (-line.depth, line.index) > base.key:
            warnings.append(
                f"{line.text.strip()!r} changes the days in words; write the number in digits. It was ignored."
            )

    amendments: list[Amendment] = []
    current = (days, until_text)
    previous: _Signal | None = None
    for signal in sorted(signals.values(), key=lambda s: s.key):
        if (
            amendments
            and previous is not None
            and signal.line.depth == previous.line.depth
            and signal.days == amendments[-1].days
        ):
            last = amendments[-1]
            last.text = f"{last.text}\n{signal.text}"
            last.until_text = last.until_text or signal.until_text
            last.until_zone = last.until_zone or signal.until_zone
            previous = signal
            continue
        if signal.days == current[0] and (not signal.until_text or signal.until_text == current[1]):
            continue  # repeats what is already asked
        sent_at = None
        found = _date_before(lines, signal.line)
        if found is not None and (base_date is None or found[0] != base_date[0]):
            sent_at = found[1]
        amendments.append(
            Amendment(
                days=signal.days,
                until_text=signal.until_text[: _LENGTH_LIMITS["until_text"]],
                until_zone=signal.until_zone,
                text=signal.text,
                sent_at=sent_at,
            )
        )
        current = (signal.days, signal.until_text)
        previous = signal
    return amendments
