"""Deciding in the admin (issue 24, items 4 and 5): the request page's Confirm and Dismiss
of a decision read from email, and the approve and reject forms a release lead decides on.

The page is read as a browser's HTML parser reads it: a ``<form>`` start tag inside an
open form is dropped, so a button's form is its ``form="..."`` attribute or the form it
stands in (``FormOwners``). tests/exceptions/test_admin_decide_browser.py clicks the same
buttons in Chromium.
"""

from __future__ import annotations

import datetime as dt
from html.parser import HTMLParser

from exceptions.models import Decision, ExceptionRequest, ProposedDecision
from exceptions.services import (
    proposed_decision_create,
)
from releasecal import tz

UTC = dt.UTC
REQUESTS = "/admin/exceptions/exceptionrequest"


class FormOwners(HTMLParser):
    """Every form and submit button of a page as the HTML parsing algorithm sees them:
    a ``<form>`` start tag while a form is open is ignored (and so is the matching end
    tag), so a button inside a nested form belongs to the outer one."""

    def __init__(self):
        super().__init__()
        self.forms: dict[str, dict] = {}  # key -> {"action", "method", "nested_tags"}
        self.buttons: list[dict] = []  # {"text", "owner"}
        self._open: str | None = None
        self._ignored_ends = 0
        self._button: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            key = attrs.get("id") or f"form-{len(self.forms)}"
            if self._open is not None:
                self.forms[self._open]["nested_tags"] += 1
                self._ignored_ends += 1
                return
            self.forms[key] = {
                "action": attrs.get("action", ""),
                "method": attrs.get("method", "get"),
                "nested_tags": 0,
            }
            self._open = key
        elif tag in {"button", "input"} and attrs.get("type", "submit" if tag == "button" else "text") == "submit":
            button = {"text": attrs.get("value", ""), "owner": attrs.get("form") or self._open}
            self.buttons.append(button)
            if tag == "button":
                self._button = button

    def handle_endtag(self, tag):
        if tag == "form":
            if self._ignored_ends:
                self._ignored_ends -= 1
            else:
                self._open = None
        elif tag == "button":
            self._button = None

    def handle_data(self, data):
        if self._button is not None:
            self._button["text"] += data.strip()

    def action_of(self, text: str) -> str:
        """The URL the button labelled ``text`` posts to ("" = the page itself)."""
        [button] = [b for b in self.buttons if b["text"] == text]
        assert button["owner"] in self.forms, f"the {text!r} button has no form"
        return self.forms[button["owner"]]["action"]


def owners(html: str) -> FormOwners:
    parser = FormOwners()
    parser.feed(html)
    return parser


def _propose(request: ExceptionRequest, outcome: str = "approved") -> ProposedDecision:
    return proposed_decision_create(
        request=request,
        outcome=outcome,
        source_text="The release team is APPROVING this exception request.",
        granted_text="end of Sunday 13 December 2026 AoE" if outcome == "approved" else "",
        granted_until=tz.end_of_day(dt.date(2026, 12, 13), "AoE") if outcome == "approved" else None,
        granted_zone="AoE" if outcome == "approved" else "",
        author_name="Kat Example",
    )


# ------------------------------------------------------------ Confirm / Dismiss


def test_the_request_pages_confirm_and_dismiss_post_to_their_own_views_not_the_change_form(
    decider_client, request_1880
):
    proposal = _propose(request_1880)
    page = owners(decider_client.get(f"{REQUESTS}/{request_1880.pk}/change/").content.decode())
    assert page.action_of("Confirm (approved)") == f"/admin/exceptions/proposeddecision/{proposal.pk}/confirm/"
    assert page.action_of("Dismiss") == f"/admin/exceptions/proposeddecision/{proposal.pk}/dismiss/"
    assert [key for key, form in page.forms.items() if form["nested_tags"]] == []


def test_confirm_from_the_request_page_approves_as_read(decider_client, decider, request_1880):
    proposal = _propose(request_1880)
    response = decider_client.post(f"/admin/exceptions/proposeddecision/{proposal.pk}/confirm/", follow=True)
    assert response.redirect_chain == [(f"{REQUESTS}/{request_1880.pk}/change/", 302)]
    assert [str(m) for m in response.context["messages"]] == [
        f"Proposal #{proposal.pk} confirmed: Exception #{request_1880.pk} for KEP-1880 (Code Freeze)."
    ]
    decision = Decision.objects.get(request=request_1880)
    assert (decision.outcome, decision.decided_by) == ("approved", decider)
    assert tz.render_deadline(decision.granted_until, decision.granted_zone) == (
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)"
    )


def test_dismiss_from_the_request_page_leaves_it_pending(decider_client, decider, request_1880):
    proposal = _propose(request_1880)
    response = decider_client.post(f"/admin/exceptions/proposeddecision/{proposal.pk}/dismiss/", follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        f"Proposal #{proposal.pk} dismissed: Exception #{request_1880.pk} for KEP-1880 (Code Freeze)."
    ]
    proposal.refresh_from_db()
    assert (proposal.state, proposal.resolved_by) == ("dismissed", decider)
    request_1880.refresh_from_db()
    assert request_1880.state == "pending"
    page = owners(decider_client.get(f"{REQUESTS}/{request_1880.pk}/change/").content.decode())
    assert [b["text"] for b in page.buttons if b["text"] in {"Dismiss", "Confirm (approved)"}] == []
