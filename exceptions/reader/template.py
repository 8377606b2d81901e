"""Phase 3 of reading a thread: the template's fields. Pure: no database.

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
inside quoted replies (``> ``) and as threads where a later message changes the days.

Each template field is taken from its oldest copy: the deepest quote, then the first
line at that depth. That copy's "Additional time needed" is the original request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from exceptions.fields import FIELD_LABELS, LENGTH_LIMITS, RequestFields
from exceptions.reader import budget
from exceptions.reader.days import is_amendment_line, read_days, read_until
from exceptions.reader.decision import decision_outcome
from exceptions.reader.messages import (
    ATTRIBUTION_RE,
    HEADER_RE,
    MD_LINK_RE,
    SIGNOFF_RE,
    Line,
    Thread,
    strip_bullet,
)
from releasecal import tz

_STAGES = {"alpha": "alpha", "beta": "beta", "stable": "stable", "ga": "stable", "deprecation": "deprecation"}
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


@dataclass
class Occurrence:
    name: str
    line: Line
    value: str
    end: int  # index of the last line consumed

    @property
    def key(self) -> tuple[int, int]:
        """Thread order: deeper quotes are older, then top to bottom."""
        return (-self.line.depth, self.line.index)


def match_key(line: Line) -> tuple[str, str] | None:
    if line.blank:
        return None
    bare = strip_bullet(line.text)
    for name, regex in _KEY_RES:
        match = regex.match(bare)
        if match:
            return name, match["rest"].strip()
    return None


def _stops_value(lines: list[Line], i: int, marks: set[int]) -> bool:
    line = lines[i]
    return bool(
        i in marks  # the next message's author mark ("[Angelos Kolaitis]")
        or match_key(line)
        or _wrapped_key_match(lines, i)
        or HEADER_RE.match(line.text)
        or ATTRIBUTION_RE.match(line.text)
        or SIGNOFF_RE.match(line.text)
        or is_amendment_line(line.text)
        or decision_outcome(line.text)
    )


def _wrapped_key_match(lines: list[Line], i: int) -> tuple[Line, tuple[str, str]] | None:
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
    joined = Line(index=i, depth=line.depth, text=f"{line.text} {lines[i + 1].text.strip()}")
    matched = match_key(joined)
    return (joined, matched) if matched else None


def _collect_value(lines: list[Line], start: int, first: str, marks: set[int]) -> tuple[str, int]:
    """The answer on the key's line plus every following line at the same quote depth,
    until the next template key (or the next message's author mark, a header, a quote
    attribution, a sign-off, a change of the days, a release-team decision). Blank lines and the template's
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
        if _stops_value(lines, i, marks):
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


def clean_answer(value: str, name: str) -> str:
    """Drop the template's prompt; short answers wrapped by the mail client become one line."""
    value = _PROMPT_RE.sub("", value.strip(), count=1).strip()
    return value if name in _PROSE_FIELDS else " ".join(value.split())


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
    text = MD_LINK_RE.sub(lambda m: f"{m.group(1)} {m.group(0)[m.group(0).index('(') + 1 : -1]}", text)
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
ENHANCEMENTS_ISSUE_RE = re.compile(r"github\.com/kubernetes/(?:enhancements|features)/issues/(\d+)", re.I)


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
        issue = ENHANCEMENTS_ISSUE_RE.search(urls[0])
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


def kep_from_text(text: str) -> int | None:
    match = re.search(r"\bKEP[\s_#:-]*(\d{1,6})\b", text, re.I)
    return int(match.group(1)) if match else None


def fit_lengths(fields: RequestFields, warnings: list[str]) -> None:
    for name, limit in LENGTH_LIMITS.items():
        value = getattr(fields, name)
        if len(value) > limit:
            setattr(fields, name, value[:limit])
            label = FIELD_LABELS.get(name, "The 'until' text")
            warnings.append(f"{label} is longer than {limit} characters; it was cut.")


def until_of(occ: Occurrence, value: str) -> tuple[str, str, list[str]]:
    """(until_text, until_zone, warnings) for one "Additional time needed" line."""
    until_text = read_until(value)
    zone, warnings = tz.zone_from_text(until_text or value)
    if not zone:
        # 2025 wording: "Additional time needed (in calendar days, due end of day AoE)".
        key_line = strip_bullet(occ.line.text)
        key_part = key_line.split(":", 1)[0] if ":" in key_line else key_line
        if re.search(r"\bAoE\b|anywhere\s+on\s+earth", key_part, re.I):
            zone = tz.AOE
    return until_text, zone, warnings


@dataclass
class TemplateReading:
    """Phase 3's answer: every template line found, the copy of each field chosen, and
    the fields read from those copies."""

    fields: RequestFields
    subject: str = ""
    kep_number: int | None = None
    occurrences: list[Occurrence] = field(default_factory=list)
    chosen: dict[str, Occurrence] = field(default_factory=dict)
    consumed: set[int] = field(default_factory=set)  # indexes of the lines the answers hold
    values: dict[str, str] = field(default_factory=dict)
    # RequestFields names of the template fields that could not be read, in template
    # order; ``problems`` says why for each, naming the field as the template does.
    missing: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    days_read: int | None = None

    @property
    def base(self) -> Occurrence | None:
        """The original request's "Additional time needed" line."""
        return self.chosen.get("days")


def _subject(thread: Thread) -> str:
    for line in thread.lines:
        header = HEADER_RE.match(line.text)
        if header and header.group(1).lower() == "subject" and header.group(2).strip():
            return header.group(2).strip()
    for line in [ln for ln in thread.lines if not ln.blank][:3]:
        if line.depth == 0 and not match_key(line) and re.search(r"exception|\bKEP\b|freeze", line.text, re.I):
            return line.text.strip()
    return ""


def _occurrences(thread: Thread) -> tuple[list[Occurrence], set[int]]:
    """Every template field line, with its answer, and the lines consumed."""
    lines, marks = thread.lines, thread.mark_starts
    occurrences: list[Occurrence] = []
    consumed: set[int] = set()
    i = 0
    while i < len(lines):
        if not i % 512:
            budget.check()
        key_line, key_end = lines[i], i
        matched = match_key(key_line)
        wrapped = None if matched else _wrapped_key_match(lines, i)
        if wrapped:
            (key_line, matched), key_end = wrapped, i + 1
        if matched:
            name, first = matched
            value, end = _collect_value(lines, key_end, first, marks)
            occurrences.append(Occurrence(name=name, line=key_line, value=value, end=end))
            consumed.update(range(i, end + 1))
            i = end + 1
        else:
            i += 1
    return occurrences, consumed


def read_template(thread: Thread) -> TemplateReading:
    """Phase 3: the template's fields from their oldest copies, with a problem for each
    field that could not be read."""
    subject = _subject(thread)
    occurrences, consumed = _occurrences(thread)
    chosen: dict[str, Occurrence] = {}
    for occ in occurrences:
        best = chosen.get(occ.name)
        if best is None or occ.key < best.key:
            chosen[occ.name] = occ

    warnings: list[str] = []
    problems: dict[str, str] = {}
    values = {name: clean_answer(occ.value, name) for name, occ in chosen.items()}

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
    if not issue_url and name_url and ENHANCEMENTS_ISSUE_RE.search(name_url):
        issue_url, kep_number = name_url, int(ENHANCEMENTS_ISSUE_RE.search(name_url).group(1))
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
        until_text, until_zone, more = until_of(base, values["days"])
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
    subject_kep = kep_from_text(subject)
    if kep_number is None:
        kep_number = subject_kep or kep_from_text(enhancement_name) or kep_from_text(thread.text)
    elif subject_kep is not None and subject_kep != kep_number:
        warnings.append(f"The subject names KEP-{subject_kep} but the issue is #{kep_number}; the issue was used.")
    if kep_number is None:
        problems.setdefault("kep_number", "no KEP number: no enhancements issue and no KEP-NNNN in the subject")
    elif not issue_url and "issue_url" in problems and "kep_pr" in chosen:
        issue_url = f"https://github.com/kubernetes/enhancements/issues/{kep_number}"
        problems.pop("issue_url")
        missing.remove("issue_url")
        ordered_problems.pop("issue_url", None)
    if "kep_number" in problems:
        ordered_problems["kep_number"] = problems["kep_number"]

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
        source_text=thread.text,
    )
    return TemplateReading(
        fields=fields,
        subject=subject,
        kep_number=kep_number,
        occurrences=occurrences,
        chosen=chosen,
        consumed=consumed,
        values=values,
        missing=missing,
        problems=ordered_problems,
        warnings=warnings,
        days_read=days,
    )


def template_lines(thread: Thread) -> set[int]:
    """Lines that hold template answers (a decision is never read from them)."""
    consumed: set[int] = set()
    inside = False
    depth = 0
    for line in thread.lines:
        if match_key(line):
            inside, depth = True, line.depth
            consumed.add(line.index)
            continue
        if inside and (line.depth != depth or HEADER_RE.match(line.text) or decision_outcome(line.text)):
            inside = False
        if inside:
            consumed.add(line.index)
    return consumed
