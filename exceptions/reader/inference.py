"""Which freeze and which release a thread points at, each with the reason. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The PRR freeze's names: "PRR Freeze", "Production Readiness (Review) Freeze", and from
# v1.38 "KEP Readiness Deadline" (kubernetes/community#9169).
_PRR = r"(?:prr|production[\s-]+readiness(?:[\s-]+review)?|kep[\s-]+readiness)"
MILESTONE_KIND_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("code-freeze", re.compile(r"\bcode[\s-]*freeze\b", re.I)),
    ("enhancements-freeze", re.compile(r"\benhancements?[\s-]*freeze\b", re.I)),
    ("prr-freeze", re.compile(rf"\b{_PRR}[\s-]*(?:freeze|deadline)\b", re.I)),
    ("docs-freeze", re.compile(r"\b(?:docs?|documentation)[\s-]*freeze\b", re.I)),
    ("test-freeze", re.compile(r"\btest[\s-]*freeze\b", re.I)),
]

# One request may name the PRR and the enhancements freeze together (the handbook,
# 2025-2026: one request, one combined completion date), in the wordings people use:
# "PRR and Enhancements Freeze", "PRR/Enhancements freeze", "Enhancements Freeze and PRR
# Freeze", "KEP Readiness Deadline and Enhancements Freeze". One of the two names says
# "freeze" (or "deadline"): "the enhancements and PRR reviews" names no freeze.
COMBINED_KINDS = ("prr-freeze", "enhancements-freeze")  # first, second (services.COMBINED_FREEZES)
_JOIN = r"\s*(?:&|/|\+|\band\b)\s*(?:the\s+)?"
_ENH = r"enhancements?"
COMBINED_PATTERN = re.compile(
    rf"\b(?:{_PRR}(?:[\s-]*(?:freeze|deadline))?{_JOIN}{_ENH}[\s-]*freeze"
    rf"|{_ENH}(?:[\s-]*freeze)?{_JOIN}{_PRR}[\s-]*(?:freeze|deadline))s?\b",
    re.I,
)
_PAIR = " and ".join(COMBINED_KINDS)  # the pair's name among the kinds found


@dataclass
class KindsNamed:
    """The freezes one text names, in the order written; ``combined``: the PRR and the
    enhancements freeze named together as one request's pair."""

    kinds: list[str]
    words: list[str]  # what the text says for each
    combined: bool = False


def kinds_named(text: str) -> KindsNamed:
    """The freezes ``text`` names, a combined pair counted as one name."""
    found: list[tuple[int, str, str]] = [(m.start(), _PAIR, m.group(0)) for m in COMBINED_PATTERN.finditer(text)]
    rest = COMBINED_PATTERN.sub(lambda m: " " * len(m.group(0)), text) if found else text
    for slug, regex in MILESTONE_KIND_PATTERNS:
        match = regex.search(rest)
        if match:
            found.append((match.start(), slug, match.group(0)))
    first: dict[str, str] = {}  # slug -> its first words, in the order written
    for _, slug, words in sorted(found):
        first.setdefault(slug, words)
    if _PAIR in first and set(first) <= {_PAIR, *COMBINED_KINDS}:
        # The pair, and either freeze again on its own ("... we meet the enhancements freeze").
        return KindsNamed(list(COMBINED_KINDS), [first[_PAIR]], combined=True)
    return KindsNamed(list(first), list(first.values()))


def guess_milestone_kind(*texts: str) -> tuple[str, str, str]:
    """The freeze the texts name: (slug, the second freeze of a combined request or "",
    warning). Tried in order; "" if none or several."""
    for text in texts:
        named = kinds_named(text)
        if named.combined:
            return named.kinds[0], named.kinds[1], ""
        if len(named.kinds) == 1:
            return named.kinds[0], "", ""
        if len(named.kinds) > 1:
            kinds = ", ".join(named.kinds)
            return "", "", f"The text names several freezes ({kinds}); say which one with --milestone."
    return "", "", ""


@dataclass
class Inference:
    value: str  # a milestone kind slug or a release slug; "" when none
    reason: str
    also: str = ""  # the second freeze of a combined request (a kind slug), else ""

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
    """The freeze the subject names, else the text, else the answers, with the reason;
    a combined request's pair sets ``also`` to the enhancements freeze."""
    answers = "\n".join([parsed.fields.reason, parsed.fields.risks_adding, parsed.fields.risks_cutting])
    for where, source in (("subject", parsed.subject), ("text", text), ("answers", answers)):
        named = kinds_named(source)
        if named.combined:
            return Inference(named.kinds[0], f"the {where} says {named.words[0]!r}", also=named.kinds[1])
        if len(named.kinds) == 1:
            return Inference(named.kinds[0], f"the {where} says {named.words[0]!r}")
        if len(named.kinds) > 1 and where == "subject":
            kinds = ", ".join(named.kinds)
            return Inference("", f"the subject names several freezes ({kinds})")
    return Inference("", "no freeze is named in the subject or the text")
