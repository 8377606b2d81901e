"""Which freeze and which release a thread points at, each with the reason. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

MILESTONE_KIND_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("code-freeze", re.compile(r"\bcode[\s-]*freeze\b", re.I)),
    ("enhancements-freeze", re.compile(r"\benhancements?[\s-]*freeze\b", re.I)),
    ("prr-freeze", re.compile(r"\b(?:prr|production[\s-]+readiness(?:[\s-]+review)?)[\s-]*freeze\b", re.I)),
    ("docs-freeze", re.compile(r"\b(?:docs?|documentation)[\s-]*freeze\b", re.I)),
    ("test-freeze", re.compile(r"\btest[\s-]*freeze\b", re.I)),
]


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


@dataclass
class Inference:
    value: str  # a milestone kind slug or a release slug; "" when none
    reason: str

    def as_dict(self) -> dict:
        return {"value": self.value or None, "reason": self.reason}


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


def infer_milestone_kind(parsed, text: str) -> Inference:
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
