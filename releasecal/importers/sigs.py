"""SIG leads from kubernetes/community's ``sigs.yaml``.

Each entry of ``sigs:`` has a ``label`` (``node``: what KEPs name as their SIG) and
``leadership`` with ``chairs`` and ``tech_leads`` (``github``, ``name``, ``email``).
``emeritus_leads`` are former leads and are not imported; neither are working groups or
committees (KEPs are owned by SIGs). The import replaces the rows of every SIG in the
file (a lead who stepped down is removed) and links each row to the user whose username
is the GitHub handle, or whose email is the lead's, when exactly one matches. Links made
by hand in the admin are kept when the import finds none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction

from releasecal.errors import ValidationFailed
from releasecal.models import SigLead

ROLES = {"chairs": SigLead.Role.CHAIR, "tech_leads": SigLead.Role.TECH_LEAD}


@dataclass
class SigsImport:
    sigs: list[str] = field(default_factory=list)
    leads: int = 0
    linked: int = 0
    removed: int = 0


def _rows(data) -> list[dict]:
    if not isinstance(data, dict) or not isinstance(data.get("sigs"), list):
        raise ValidationFailed("Not a sigs.yaml: no top-level 'sigs:' list.")
    rows = []
    for sig in data["sigs"]:
        if not isinstance(sig, dict):
            continue
        label = str(sig.get("label") or str(sig.get("dir", "")).removeprefix("sig-")).strip().lower()
        leadership = sig.get("leadership") if isinstance(sig.get("leadership"), dict) else {}
        if not label:
            continue
        for key, role in ROLES.items():
            for person in leadership.get(key) or []:
                if isinstance(person, dict) and str(person.get("github", "")).strip():
                    rows.append(
                        {
                            "sig": label[:64],
                            "github": str(person["github"]).strip()[:64],
                            "name": str(person.get("name") or "")[:200],
                            "email": str(person.get("email") or "")[:254],
                            "role": role,
                        }
                    )
        rows.append({"sig": label[:64]})  # a SIG with no leads listed still has its rows replaced
    return rows


def _user_for(github: str, email: str):
    users = get_user_model().objects.filter(is_active=True)
    by_name = list(users.filter(username__iexact=github)[:2])
    if len(by_name) == 1:
        return by_name[0]
    if email:
        by_email = list(users.filter(email__iexact=email)[:2])
        if len(by_email) == 1:
            return by_email[0]
    return None


@transaction.atomic
def sigs_import(*, path: str | Path) -> SigsImport:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationFailed(f"No such file: {path}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"{path} is not readable YAML: {str(exc).splitlines()[0]}") from None
    rows = _rows(data)
    result = SigsImport(sigs=sorted({row["sig"] for row in rows}))
    kept = set()
    for row in rows:
        if "github" not in row:
            continue
        existing = SigLead.objects.filter(sig=row["sig"], github__iexact=row["github"], role=row["role"]).first()
        user = _user_for(row["github"], row["email"]) or (existing.user if existing else None)
        lead = existing or SigLead()
        for name, value in {**row, "user": user}.items():
            setattr(lead, name, value)
        lead.save()
        kept.add(lead.pk)
        result.leads += 1
        result.linked += user is not None
    result.removed, _ = SigLead.objects.filter(sig__in=result.sigs).exclude(pk__in=kept).delete()
    return result
