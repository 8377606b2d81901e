"""What a text is when it is not an exception request: refused with one sentence (422,
``extra.kind``) that says what it looks like and what to do. Pure."""

from __future__ import annotations

import re

from exceptions.fields import FIELD_LABELS
from exceptions.reader.decision import decision_outcome
from exceptions.reader.messages import HEADER_RE, MD_LINK_RE
from exceptions.reader.template import TemplateReading
from releasecal.errors import DomainError


class NotARequest(DomainError):
    """The text is readable but is not an exception request (422)."""

    status_code = 422
    code = "not_a_request"


# Line-anchored patterns match blanks with [^\S\n] (whitespace but the newline: NBSP from
# an HTML mail's &nbsp; too), never \s: \s spans newlines, and
# "^\s*-?\s*" on a run of blank lines backtracks in cubic time (50,000 newlines: minutes).
YAML_ONLY_RE = re.compile(r"^[^\S\n]*(?:-[^\S\n]*)?(date_requested|date_reviewed|thread|pull_requests)[^\S\n]*:", re.M)
_YAML_TOP_RE = re.compile(r"^(?:enhancementFreeze|codeFreeze|docsFreeze|testFreeze)\s*:", re.M)
KEP_PR_RE = re.compile(
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


def _template_keys_found(parsed: TemplateReading) -> list[str]:
    return [name for name in FIELD_LABELS if not parsed.problems.get(name, "").endswith("is not in the email")]


def classify_non_request(text: str, parsed: TemplateReading) -> str:
    """The kind of non-request ``text`` is (a key of NON_REQUEST_MESSAGES), or "" when
    it reads as a request (the days or the KEP found, and at least three template keys)."""
    plain = MD_LINK_RE.sub(r"\1", text)
    if _YAML_TOP_RE.search(plain) or len({m.group(1).lower() for m in YAML_ONLY_RE.finditer(plain)}) >= 2:
        return "exceptions_yaml"
    found = _template_keys_found(parsed)
    if len(found) >= 3 and ("days" in found or "issue_url" in found or parsed.kep_number is not None):
        return ""
    if KEP_PR_RE.search(plain):
        return "kep_pr_thread"
    body = "\n".join(ln for ln in plain.splitlines() if ln.strip() and not HEADER_RE.match(ln))
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
