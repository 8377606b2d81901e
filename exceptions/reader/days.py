"""How people write a number of days and an "until ...", in a template answer or in a
sentence that changes the days ("Updating the time requested to 2 days."). Pure."""

from __future__ import annotations

import re

from releasecal import tz

NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|a\\s+couple\\s+of"
)
DAY_UNIT = r"(?:(?:more|additional|extra|calendar|business|working)\s+)*days?\b"
CHANGE_VERBS = (
    r"updat(?:e|ed|ing)|chang(?:e|ed|ing)|revis(?:e|ed|ing)|amend(?:ed|ing)?|reduc(?:e|ed|ing)|increas(?:e|ed|ing)"
    r"|lower(?:ed|ing)?|bump(?:ed|ing)?|adjust(?:ed|ing)?|correct(?:ed|ing|ion)?"
)
# Most specific first: "from 6 days to 4 days" is 4; "4 days instead of 6" is 4.
_AMEND_RES = [
    re.compile(rf"\b(?:{CHANGE_VERBS})\b[^.\n]{{0,80}}?\bto\s+(?:only\s+|just\s+)?(?P<days>\d+)\s*{DAY_UNIT}", re.I),
    re.compile(rf"(?<![\d.])\b(?P<days>\d+)\s*{DAY_UNIT}\s*instead\b", re.I),
    re.compile(rf"\b(?:{CHANGE_VERBS})\b[^.\n]{{0,80}}?(?<![\d.])\b(?P<days>\d+)\s*{DAY_UNIT}", re.I),
    re.compile(rf"\b(?:actually|now|only)\b[^.\n]{{0,40}}?(?<![\d.])\b(?P<days>\d+)\s*{DAY_UNIT}", re.I),
]
# A release-team decision ("approved, you now have 3 days") is not the requester's change;
# it only guards the weakest pattern (no change verb).
_DECISION_RE = re.compile(r"\b(?:approved|granted|rejected|denied|declined)\b", re.I)
_AMEND_WORDS_RE = re.compile(
    rf"\b(?:{CHANGE_VERBS}|actually|instead|now|only)\b[^.\n]{{0,80}}?\b(?P<word>{NUMBER_WORDS})\s+{DAY_UNIT}", re.I
)


def amendment_match(text: str) -> re.Match[str] | None:
    for regex in _AMEND_RES:
        match = regex.search(text)
        if match and not (regex is _AMEND_RES[-1] and _DECISION_RE.search(text)):
            return match
    return None


def is_amendment_line(text: str) -> bool:
    return bool(amendment_match(text) or _AMEND_WORDS_RE.search(text))


_TIMEISH_RE = re.compile(
    rf"\b(?:{tz.WEEKDAY_WORD}|{tz.MONTH_WORD}|eod|end\s+of\s+(?:the\s+)?day|\d{{1,2}}:\d{{2}}|noon|midnight)\b", re.I
)


_UNTIL_WORDS = (r"until|till|til", r"through|thru|ending", r"due(?:\s+by)?", r"by")


def read_until(value: str) -> str:
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
    ranged = re.search(rf"\b(\d+)\s*(?:-|\u2013|to|or)\s*(\d+)\s*{DAY_UNIT}", head, re.I)
    if ranged:
        return None, f"{text!r} is a range; give one number of days", warnings
    fraction = re.search(rf"\b(\d+)[.,](\d+)\s*{DAY_UNIT}", head, re.I)
    if fraction:
        days = int(fraction.group(1)) + 1
        warnings.append(f"{text!r} is not a whole number of days; read as {days}.")
        return days, "", warnings
    # "N days" outside parentheses, else inside them ("until 26 July (3 days)").
    match = re.search(rf"\b(\d+)\s*{DAY_UNIT}", head, re.I) or re.search(rf"\b(\d+)\s*{DAY_UNIT}", text, re.I)
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
        rf"^\s*(?:~|\u2248|about|approx\.?|approximately|around)?\s*(\d+)\b(?!\s*(?:{tz.MONTH_WORD}|[:/.]\d))",
        head,
        re.I,
    )
    if leading:
        return int(leading.group(1)), "", warnings
    word = re.search(rf"\b({NUMBER_WORDS})\b", text, re.I)
    if word:
        return (
            None,
            f"{word.group(1)!r} is not written in digits; write the number of days as digits (e.g. 7)",
            warnings,
        )
    return None, f"no number of days in {text!r}", warnings
