"""The fields of an exception request, as the Kubernetes template names them. Pure: no
database, no Django; the services take ``RequestFields`` and the reader fills it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

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

# The column sizes of ExceptionRequestRevision: longer text is cut (with a warning)
# rather than failing in the database.
LENGTH_LIMITS = {"enhancement_name": 300, "sig": 64, "issue_url": 500, "until_text": 200}


@dataclass
class RequestFields:
    """The fields of the Kubernetes exception request template."""

    days: int
    enhancement_name: str = ""
    stage: str = ""
    sig: str = ""
    issue_url: str = ""
    pr_urls: list[str] = field(default_factory=list)
    until_text: str = ""
    until_zone: str = ""
    reason: str = ""
    risks_adding: str = ""
    risks_cutting: str = ""
    source_text: str = ""
    # The until-text read as an instant (``exceptions.reader`` fills it when it can).
    until_at: dt.datetime | None = None
