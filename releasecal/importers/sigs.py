"""SIG leads from kubernetes/community's ``sigs.yaml``.

Each entry of ``sigs:`` has a ``label`` (``node``: what KEPs name as their SIG) and
``leadership`` with ``chairs`` and ``tech_leads`` (``github``, ``name``, ``email``).
``emeritus_leads`` are former leads and are not imported; neither are working groups or
committees (KEPs are owned by SIGs). The import replaces the rows of every SIG in the
file (a lead who stepped down is removed) and links each row to the user whose username
is the GitHub handle, or whose email is the lead's, when exactly one matches. Links made
by hand in the admin are kept when the import finds none.

Each SIG's ``contact: mailing_list:`` is kept too (``SigContact``: approved exceptions
are announced to it, see docs/notices). sigs.yaml gives the list's web address; the
email address is derived only where it follows from the URL exactly
(``mailing_list_address``): a Google Workspace group ``groups.google.com/a/<domain>/g/<group>``
is ``<group>@<domain>``, a public group (``groups.google.com/g/<group>``,
``.../forum/#!forum/<group>``) is ``<group>@googlegroups.com``, and ``mailto:`` gives its
address. Any other address is stored as the URL alone, with no email address (the import
says which), for the admin to fill in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.contrib.auth import get_user_model
from django.db import transaction

from releasecal.errors import ValidationFailed
from releasecal.importers.files import load_data
from releasecal.models import SigContact, SigLead

ROLES = {"chairs": SigLead.Role.CHAIR, "tech_leads": SigLead.Role.TECH_LEAD}


@dataclass
class SigsImport:
    sigs: list[str] = field(default_factory=list)
    leads: int = 0
    linked: int = 0
    removed: int = 0
    lists: int = 0
    # SIGs whose mailing_list is a web address no email address follows from exactly.
    lists_without_address: list[str] = field(default_factory=list)


GROUP_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}", re.IGNORECASE)
DOMAIN = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}", re.IGNORECASE)


def mailing_list_address(url: str) -> str:
    """The email address of a mailing list given by its web address, or "" when the
    address does not follow from it exactly.

    >>> mailing_list_address("https://groups.google.com/a/kubernetes.io/g/sig-node")
    'sig-node@kubernetes.io'
    >>> mailing_list_address("https://groups.google.com/forum/#!forum/kubernetes-sig-apps")
    'kubernetes-sig-apps@googlegroups.com'
    """
    url = (url or "").strip()
    if url.lower().startswith("mailto:"):
        address = unquote(url[7:].split("?", 1)[0]).strip()
        local, _, domain = address.partition("@")
        return address.lower() if GROUP_NAME.fullmatch(local) and DOMAIN.fullmatch(domain) else ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname != "groups.google.com":
        return ""
    path = [p for p in parts.path.split("/") if p]
    fragment = [p for p in parts.fragment.split("/") if p]
    domain = "googlegroups.com"
    if len(path) >= 2 and path[0] == "a":
        domain, path = path[1].lower(), path[2:]
        if not DOMAIN.fullmatch(domain):
            return ""
    if len(path) == 2 and path[0] == "g":
        group = path[1]
    elif path == ["forum"] and len(fragment) == 2 and fragment[0] == "!forum":
        group = fragment[1]
    else:
        return ""
    return f"{group.lower()}@{domain}" if GROUP_NAME.fullmatch(group) else ""


def _contacts(data) -> list[dict]:
    """Each SIG's label, name and mailing list (the SIG's own, not a subproject's)."""
    found = []
    for sig in data["sigs"]:
        if not isinstance(sig, dict):
            continue
        label = str(sig.get("label") or str(sig.get("dir", "")).removeprefix("sig-")).strip().lower()
        contact = sig.get("contact") if isinstance(sig.get("contact"), dict) else {}
        url = str(contact.get("mailing_list") or "").strip()
        if label:
            found.append({"sig": label[:64], "name": str(sig.get("name") or "")[:200], "url": url[:500]})
    return found


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
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationFailed(f"No such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise ValidationFailed(f"{path} is not readable YAML: {str(exc).splitlines()[0]}") from None
    # The importers' one YAML gate: an alias bomb or a python/* tag is one message.
    data = load_data(text, source=str(path))
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
    for contact in _contacts(data):
        address = mailing_list_address(contact["url"])
        if contact["url"] and not address:
            result.lists_without_address.append(contact["sig"])
        existing = SigContact.objects.filter(sig=contact["sig"]).first()
        if existing is not None and not address and existing.mailing_list_url == contact["url"]:
            address = existing.mailing_list  # an address filled in by hand for this URL stays
        SigContact.objects.update_or_create(
            sig=contact["sig"],
            defaults={"name": contact["name"], "mailing_list_url": contact["url"], "mailing_list": address},
        )
        result.lists += bool(address)
    return result
