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

import pytest
from django.contrib.auth.models import User

from exceptions.models import Decision, ExceptionRequest, ProposedDecision
from exceptions.services import (
    exception_request_signoff,
    proposed_decision_create,
)
from releasecal import tz
from releasecal.models import SigLead

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


# ------------------------------------------------------------ the approve and reject forms


class Facts(HTMLParser):
    """The (label, value) rows of the decision forms: each label and value in its own element."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[str, str]] = []
        self._depth = 0  # inside a .rc-fact row
        self._part: str | None = None
        self._label = ""
        self._value = ""

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if "rc-fact" in classes:
            self._depth, self._label, self._value = 1, "", ""
            return
        if self._depth:
            self._depth += tag not in {"br", "input"}
            if tag == "label":
                self._part = "label"
            elif "readonly" in classes:
                self._part = "value"
            elif tag in {"br", "div"} and self._part == "value" and self._value:
                self._value += "\n"

    def handle_endtag(self, tag):
        if not self._depth:
            return
        if tag == "label":
            self._part = None
        self._depth -= 1
        if self._depth == 0:
            self.rows.append((self._label.strip(), self._value.strip()))
            self._part = None

    def handle_data(self, data):
        if self._part == "label":
            self._label += data
        elif self._part == "value":
            self._value += " ".join(data.split()) if data.strip() else ""


def facts(html: str) -> dict[str, str]:
    parser = Facts()
    parser.feed(html)
    return dict(parser.rows)


EXPECTED_FACTS = {
    "KEP:": "KEP-1880: Multiple Service CIDRs",
    "Freeze:": "Code Freeze: end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
    "Days requested:": "3 days",
    "Requester:": "Antonio Ojea <aojea@example.com>",
    "Submitted:": "21:00 AoE Sunday 29 November 2026 (09:00 UTC Monday 30 November 2026)",
    "State:": "Pending",
    "Stage / SIG:": "Stable / network",
    "Enhancements issue:": "https://github.com/kubernetes/enhancements/issues/1880",
    "PRs:": "https://github.com/kubernetes/kubernetes/pull/128971",
    "Why is it critical:": "The GA graduation is the last step; the e2e tests are written.",
    "Risks of adding late:": "Low: the feature has been beta for three releases.",
    "Risks of cutting:": "Users wait another release for GA.",
    "Sign-offs:": "sam (SIG network chair), 00:00 AoE Tuesday 1 December 2026 (12:00 UTC Tuesday 1 December 2026): +1",
}


@pytest.fixture
def signed(request_1880):
    signer = User.objects.create_user("sam")
    SigLead.objects.create(sig="network", github="sam", user=signer, role=SigLead.Role.CHAIR)
    exception_request_signoff(
        request=request_1880, author=signer, note="+1", at=dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    )
    return request_1880


def test_the_approve_form_shows_the_answers_prs_signoffs_and_warnings_each_label_apart(decider_client, signed):
    html = decider_client.get(f"{REQUESTS}/{signed.pk}/approve/").content.decode()
    shown = facts(html)
    assert {k: shown.get(k) for k in EXPECTED_FACTS} == EXPECTED_FACTS
    assert shown["Default grant:"] == (
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)\n"
        "The freeze day (Thursday 10 December 2026) plus 3 days, to the end of that day in AoE. Pre-filled below."
    )


def test_the_reject_form_shows_the_same_answers(decider_client, request_1880):
    html = decider_client.get(f"{REQUESTS}/{request_1880.pk}/reject/").content.decode()
    shown = facts(html)
    for label in ("KEP:", "Freeze:", "Why is it critical:", "Risks of adding late:", "Risks of cutting:", "PRs:"):
        assert shown[label] == EXPECTED_FACTS[label]
    assert shown["Sign-offs:"] == "none yet"
    assert "Default grant:" not in shown


def test_the_forms_show_the_requests_warnings(decider_client, request_1880):
    ExceptionRequest.objects.filter(pk=request_1880.pk).update(
        days=9, submitted_at=dt.datetime(2026, 12, 15, 12, 0, tzinfo=UTC)
    )
    html = decider_client.get(f"{REQUESTS}/{request_1880.pk}/reject/").content.decode()
    assert (
        '<li class="warning">9 days requested: exceptions are meant to be days, not weeks '
        "(more than 7 days needs a strong reason).</li>"
    ) in html
    assert (
        '<li class="warning">Filed after the request window closed (end of Sunday 13 December 2026 AoE '
        "(12:00 UTC Monday 14 December 2026), 72 hours after the freeze).</li>"
    ) in html


def test_the_grant_is_prefilled_in_the_words_it_is_shown_in(decider_client, request_1880):
    response = decider_client.get(f"{REQUESTS}/{request_1880.pk}/approve/")
    form = response.context["items"][0]["form"]
    assert (form["granted_day"].value(), form["granted_time"].value()) == ("2026-12-13", "")
    html = response.content.decode()
    assert "2026-12-14 00:00" not in html
    response = decider_client.post(
        f"{REQUESTS}/{request_1880.pk}/approve/", {"granted_day": "2026-12-13", "granted_time": "", "note": ""},
        follow=True,
    )  # fmt: skip
    assert [str(m) for m in response.context["messages"]] == [
        f"Approved Exception #{request_1880.pk} for KEP-1880 (Code Freeze): granted until "
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)."
    ]
    assert Decision.objects.get(request=request_1880).granted_until == dt.datetime(2026, 12, 14, 12, tzinfo=UTC)


def test_a_clock_time_on_the_day_is_granted_as_written(decider_client, request_1880):
    response = decider_client.post(
        f"{REQUESTS}/{request_1880.pk}/approve/",
        {"granted_day": "2026-12-13", "granted_time": "18:00", "zone": "Europe/Berlin"},
        follow=True,
    )
    assert [str(m) for m in response.context["messages"]] == [
        f"Approved Exception #{request_1880.pk} for KEP-1880 (Code Freeze): granted until "
        "18:00 CET Sunday 13 December 2026 (17:00 UTC Sunday 13 December 2026)."
    ]


def test_midnight_is_refused_with_the_day_it_ends(decider_client, request_1880):
    response = decider_client.post(
        f"{REQUESTS}/{request_1880.pk}/approve/", {"granted_day": "2026-12-14", "granted_time": "00:00"}
    )
    assert response.status_code == 200
    assert response.context["items"][0]["form"].errors == {
        "granted_time": [
            "00:00 on Monday 14 December 2026 starts that day: it is the end of Sunday 13 December 2026 AoE. "
            "Give that day, 2026-12-13, with no time."
        ]
    }
    assert not Decision.objects.exists()


@pytest.mark.parametrize(
    ("day", "time", "field", "message"),
    [
        ("13/12/2026", "", "granted_day",
         "Give the granted until day as YYYY-MM-DD (e.g. 2026-12-13), not '13/12/2026'."),
        ("2026-02-30", "", "granted_day", "'2026-02-30' is not a date: day is out of range for month."),
        ("2026-12-13", "6pm", "granted_time",
         "Give the granted until time as HH:MM (e.g. 18:00), or leave it empty for the end of the day; not '6pm'."),
        ("", "", "granted_day", "This field is required."),
    ],
)  # fmt: skip
def test_a_bad_grant_is_a_form_error(decider_client, request_1880, day, time, field, message):
    response = decider_client.post(f"{REQUESTS}/{request_1880.pk}/approve/", {"granted_day": day, "granted_time": time})
    assert response.status_code == 200
    assert response.context["items"][0]["form"].errors == {field: [message]}
    assert not Decision.objects.exists()


def test_the_list_action_prefills_each_grant_in_the_same_words(decider_client, request_1880):
    page = decider_client.post(f"{REQUESTS}/", {"action": "approve_selected", "_selected_action": [request_1880.pk]})
    [item] = page.context["items"]
    assert (item["form"]["granted_day"].value(), item["form"]["granted_time"].value()) == ("2026-12-13", "")
    assert facts(page.content.decode())["Why is it critical:"] == EXPECTED_FACTS["Why is it critical:"]
    decider_client.post(
        f"{REQUESTS}/",
        {"action": "approve_selected", "_selected_action": [request_1880.pk], "apply": "1",
         f"r{request_1880.pk}-granted_day": "2026-12-13", f"r{request_1880.pk}-granted_time": ""},
    )  # fmt: skip
    assert Decision.objects.get(request=request_1880).granted_until == dt.datetime(2026, 12, 14, 12, tzinfo=UTC)
