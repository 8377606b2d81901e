"""The admin for release leads, driven through Django's test client."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.forms import CheckboxInput
from django.test import Client
from django.urls import reverse

from exceptions.models import Decision, ExceptionRequest
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from releasecal import tz
from releasecal.models import AuditLog, Milestone, Tracking

LA = "America/Los_Angeles"


def _url(name: str, *args) -> str:
    return reverse(f"admin:{name}", args=args)


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def _payload(response) -> dict:
    """The POST body a browser would send back for an admin change page, unchanged."""
    data: dict = {}

    def add(form):
        for bound in form:
            value = bound.field.prepare_value(bound.value())
            if isinstance(bound.field.widget, CheckboxInput):
                if value:
                    data[bound.html_name] = "on"
            elif value is None:
                data[bound.html_name] = ""
            elif isinstance(value, list | tuple):
                data[bound.html_name] = [str(v) for v in value]
            else:
                data[bound.html_name] = str(value)

    add(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        add(inline.formset.management_form)
        for form in inline.formset.forms:
            add(form)
    return data


def _inline_index(payload: dict, milestone: Milestone) -> str:
    for key, value in payload.items():
        if key.startswith("milestones-") and key.endswith("-id") and value == str(milestone.pk):
            return key.removesuffix("-id")
    raise AssertionError(f"milestone {milestone.pk} not on the page")


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def su_client(client, superuser):
    client.force_login(superuser)
    return client


@pytest.fixture
def lead(release_team_member) -> User:
    release_team_member.is_staff = True
    release_team_member.save()
    return release_team_member


@pytest.fixture
def lead_client(lead):
    # Its own client: a test may use it beside su_client.
    client = Client()
    client.force_login(lead)
    return client


@pytest.fixture
def second_kep(release):
    from releasecal.services import enhancement_upsert, tracking_set

    kep = enhancement_upsert(number=4222, title="CBOR serializer", owning_sig="api-machinery")
    tracking_set(release=release, enhancement=kep, stage="alpha", status="tracked")
    return kep


@pytest.fixture
def approved_request(second_kep, code_freeze, requester, lead):
    request = exception_request_submit(
        enhancement=second_kep,
        milestone=code_freeze,
        requester=requester,
        fields=RequestFields(days=1, enhancement_name="CBOR", stage="alpha", sig="api-machinery"),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=2),
    )
    exception_request_approve(request=request, actor=lead)
    return request


# ------------------------------------------------------------------ every page renders


def test_every_admin_changelist_add_and_change_page_renders_for_a_superuser(
    su_client, pending_request, approved_request
):
    checked = 0
    for model, model_admin in admin.site._registry.items():
        info = (model._meta.app_label, model._meta.model_name)
        response = su_client.get(_url("{}_{}_changelist".format(*info)))
        assert response.status_code == 200, model
        if model_admin.has_add_permission(response.wsgi_request):
            assert su_client.get(_url("{}_{}_add".format(*info))).status_code == 200, model
        for obj in model._default_manager.all()[:3]:
            response = su_client.get(_url("{}_{}_change".format(*info), obj.pk))
            assert response.status_code == 200, (model, obj.pk)
            checked += 1
    assert checked >= 10


def test_the_request_page_shows_revisions_signoffs_decision_audit_and_effective_deadline(su_client, approved_request):
    response = su_client.get(_url("exceptions_exceptionrequest_change", approved_request.pk))
    body = response.content.decode()
    assert "Revisions (1)" in body
    assert "Sign-offs (0)" in body
    # 19:00 PDT Tue 23 July + 1 day -> end of Wed 24 July PDT.
    assert "end of Wednesday 24 July 2024 PDT (07:00 UTC Thursday 25 July 2024)" in body
    assert "exception.approved" in body
    assert "exception.submit" in body
    assert "(granted extension)" in body


def test_the_release_page_shows_milestones_in_native_zone_and_utc(su_client, release):
    response = su_client.get(_url("releasecal_release_change", release.pk))
    body = response.content.decode()
    assert "19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)" in body
    # The wall-time input is pre-filled in the native zone, not UTC.
    assert 'value="2024-07-23 19:00"' in body


# ------------------------------------------------------------------ filters and search


def test_request_list_filters_by_state_release_milestone_and_sig(
    su_client, pending_request, approved_request, code_freeze
):
    changelist = _url("exceptions_exceptionrequest_changelist")

    def ids(query: str) -> set[int]:
        response = su_client.get(changelist + query)
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    both = {pending_request.pk, approved_request.pk}
    assert ids("") == both
    assert ids("?state__exact=pending") == {pending_request.pk}
    assert ids("?state__exact=approved") == {approved_request.pk}
    assert ids(f"?release__id__exact={code_freeze.release_id}") == both
    assert ids(f"?milestone__id__exact={code_freeze.pk}") == both
    assert ids("?sig=node") == {pending_request.pk}
    assert ids("?sig=api-machinery") == {approved_request.pk}
    assert ids("?sig=storage") == set()


def test_request_list_searches_by_kep_number_and_name(su_client, pending_request, approved_request):
    changelist = _url("exceptions_exceptionrequest_changelist")

    def ids(term: str) -> set[int]:
        response = su_client.get(changelist, {"q": term})
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert ids("2400") == {pending_request.pk}
    assert ids("KEP-2400") == {pending_request.pk}
    assert ids("#4222") == {approved_request.pk}
    assert ids("240") == set()  # a number is matched exactly, not as a substring
    assert ids("swap") == {pending_request.pk}  # enhancement title
    assert ids("CBOR") == {approved_request.pk}  # title and the revision's enhancement_name


def test_the_list_shows_submitted_in_the_release_zone_and_the_effective_deadline(su_client, approved_request):
    body = su_client.get(_url("exceptions_exceptionrequest_changelist")).content.decode()
    assert "21:00 PDT Tuesday 23 July 2024" in body  # submitted 2 hours after the freeze
    assert "end of Wednesday 24 July 2024 PDT (07:00 UTC Thursday 25 July 2024)" in body


def test_tracking_list_filters_by_status_and_sig(su_client, pending_request, second_kep):
    changelist = _url("releasecal_tracking_changelist")
    response = su_client.get(changelist + "?status__exact=exception_pending")
    assert [t.enhancement.number for t in response.context["cl"].result_list] == [2400]
    response = su_client.get(changelist + "?sig=api-machinery")
    assert [t.enhancement.number for t in response.context["cl"].result_list] == [4222]
    response = su_client.get(changelist, {"q": "4222"})
    assert [t.enhancement.number for t in response.context["cl"].result_list] == [4222]


# ------------------------------------------------------------------ milestones through the release form


def test_a_milestone_edited_in_the_release_form_bumps_sequence_and_writes_an_audit_row(
    su_client, superuser, release, code_freeze
):
    page = su_client.get(_url("releasecal_release_change", release.pk))
    payload = _payload(page)
    prefix = _inline_index(payload, code_freeze)
    before_sequence = code_freeze.sequence
    payload[f"{prefix}-at"] = "2024-07-23 20:00"
    response = su_client.post(_url("releasecal_release_change", release.pk), payload)
    assert response.status_code == 302, response.context and response.context["errors"]
    code_freeze.refresh_from_db()
    assert code_freeze.at == dt.datetime(2024, 7, 24, 3, 0, tzinfo=dt.UTC)
    assert code_freeze.sequence == before_sequence + 1
    row = AuditLog.objects.filter(object_type="releasecal.milestone", object_id=str(code_freeze.pk)).first()
    assert row.action == "milestone.update"
    assert row.actor == superuser
    assert row.before["at"] == "2024-07-24T02:00:00Z"
    assert row.after["at"] == "2024-07-24T03:00:00Z"


def test_an_unchanged_release_form_does_not_bump_any_sequence(su_client, release):
    sequences = dict(release.milestones.values_list("pk", "sequence"))
    audit_count = AuditLog.objects.count()
    payload = _payload(su_client.get(_url("releasecal_release_change", release.pk)))
    assert su_client.post(_url("releasecal_release_change", release.pk), payload).status_code == 302
    assert dict(release.milestones.values_list("pk", "sequence")) == sequences
    assert AuditLog.objects.count() == audit_count


def test_a_gap_time_entered_in_the_admin_is_refused_naming_both_offsets(su_client, release, code_freeze):
    payload = _payload(su_client.get(_url("releasecal_release_change", release.pk)))
    prefix = _inline_index(payload, code_freeze)
    payload[f"{prefix}-at"] = "2024-03-10 02:30"  # clocks jump 02:00 -> 03:00 in Los Angeles
    payload[f"{prefix}-ends_at"] = ""
    response = su_client.post(_url("releasecal_release_change", release.pk), payload)
    assert response.status_code == 200
    body = response.content.decode()
    assert "does not exist in America/Los_Angeles" in body
    assert "-08:00" in body
    assert "-07:00" in body
    code_freeze.refresh_from_db()
    assert code_freeze.at == dt.datetime(2024, 7, 24, 2, 0, tzinfo=dt.UTC)


def test_a_fold_time_is_refused_and_an_explicit_offset_is_accepted(su_client, release, code_freeze):
    url = _url("releasecal_release_change", release.pk)
    payload = _payload(su_client.get(url))
    prefix = _inline_index(payload, code_freeze)
    payload[f"{prefix}-ends_at"] = ""
    payload[f"{prefix}-at"] = "2024-11-03 01:30"
    body = su_client.post(url, payload).content.decode()
    assert "is ambiguous in America/Los_Angeles" in body
    assert "-07:00" in body
    assert "-08:00" in body
    payload[f"{prefix}-at"] = "2024-11-03 01:30-08:00"
    assert su_client.post(url, payload).status_code == 302
    code_freeze.refresh_from_db()
    assert code_freeze.at == dt.datetime(2024, 11, 3, 9, 30, tzinfo=dt.UTC)
    assert code_freeze.at_wall == dt.datetime(2024, 11, 3, 1, 30)  # the wall time entered, kept beside the instant
    # The page now pre-fills the fold time with its offset so it reads back the same.
    assert 'value="2024-11-03 01:30-08:00"' in su_client.get(url).content.decode()


def test_a_milestone_added_in_the_release_form_is_created_in_its_zone(su_client, release, kinds):
    url = _url("releasecal_release_change", release.pk)
    payload = _payload(su_client.get(url))
    total = int(payload["milestones-TOTAL_FORMS"])
    new = f"milestones-{total - 1}"  # the extra blank row
    payload |= {
        f"{new}-kind": str(kinds["docs-freeze"].pk),
        f"{new}-title": "Docs Freeze",
        f"{new}-at": "2024-07-30 23:59",
        f"{new}-zone": "aoe",
    }
    assert su_client.post(url, payload).status_code == 302
    docs = release.milestones.get(title="Docs Freeze")
    assert docs.zone == "AoE"
    assert docs.at == dt.datetime(2024, 7, 31, 11, 59, tzinfo=dt.UTC)
    assert docs.at_wall == dt.datetime(2024, 7, 30, 23, 59)
    assert AuditLog.objects.filter(object_id=str(docs.pk), action="milestone.create").exists()


def test_deleting_a_milestone_in_the_release_form_cancels_it_for_a_non_superuser(client, release, kinds):
    from django.contrib.auth.models import Permission

    user = User.objects.create_user("editor", "e@example.com", "pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_release", "change_release", "view_milestone", "change_milestone", "delete_milestone"]
        )
    )
    client.force_login(user)
    ga = release.milestones.get(kind__slug="ga")
    url = _url("releasecal_release_change", release.pk)
    payload = _payload(client.get(url))
    payload[f"{_inline_index(payload, ga)}-DELETE"] = "on"
    assert client.post(url, payload).status_code == 302
    ga.refresh_from_db()
    assert ga.cancelled is True
    assert AuditLog.objects.filter(object_id=str(ga.pk), action="milestone.cancel").exists()


def test_only_a_superuser_really_deletes_a_milestone(su_client, lead_client, release):
    ga = release.milestones.get(kind__slug="ga")
    assert lead_client.get(_url("releasecal_milestone_delete", ga.pk)).status_code == 403
    response = su_client.post(_url("releasecal_milestone_delete", ga.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Milestone.objects.filter(pk=ga.pk).exists()
    assert AuditLog.objects.filter(object_id=str(ga.pk), action="milestone.delete").exists()


# ------------------------------------------------------------------ approve / reject


def test_approve_prefills_the_default_and_approving_it_grants_end_of_day(lead_client, lead, pending_request):
    url = _url("exceptions_exceptionrequest_approve", pending_request.pk)
    page = lead_client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    # Freeze 19:00 PDT Tue 23 July + 2 days -> end of Thu 25 July in Los Angeles.
    # Pre-filled in the words it is shown in: the day 25 July, no time (its end).
    assert 'name="granted_day" value="2024-07-25"' in body
    assert "end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)" in body
    form = page.context["items"][0]["form"]
    response = lead_client.post(
        url,
        {"granted_day": form["granted_day"].value(), "granted_time": form["granted_time"].value() or "",
         "zone": "", "note": "ok"},
    )  # fmt: skip
    assert response.status_code == 302
    decision = Decision.objects.get(request=pending_request)
    assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=dt.UTC)
    assert decision.granted_zone == LA
    assert decision.decided_by == lead
    assert decision.note == "ok"
    messages = _messages(lead_client.get(response["Location"]))
    assert any("granted until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)" in m for m in messages)


def test_approve_accepts_an_explicit_time_and_zone(lead_client, pending_request):
    url = _url("exceptions_exceptionrequest_approve", pending_request.pk)
    response = lead_client.post(
        url, {"granted_day": "2024-07-27", "granted_time": "12:00", "zone": "Europe/Berlin", "note": ""}
    )
    assert response.status_code == 302
    decision = Decision.objects.get(request=pending_request)
    assert decision.granted_until == dt.datetime(2024, 7, 27, 10, 0, tzinfo=dt.UTC)
    assert decision.granted_zone == "Europe/Berlin"
    assert decision.granted_wall == dt.datetime(2024, 7, 27, 12, 0)
    pending_request.refresh_from_db()
    assert pending_request.state == "approved"


def test_approve_past_the_hard_stop_shows_the_policy_message(lead_client, pending_request):
    url = _url("exceptions_exceptionrequest_approve", pending_request.pk)
    response = lead_client.post(url, {"granted_day": "2024-08-02", "granted_time": "12:00", "zone": "", "note": ""})
    assert response.status_code == 200
    assert any("after the release's hard stop" in m for m in _messages(response))
    assert not Decision.objects.filter(request=pending_request).exists()


def test_approve_with_a_gap_time_shows_both_offsets(lead_client, pending_request):
    url = _url("exceptions_exceptionrequest_approve", pending_request.pk)
    response = lead_client.post(url, {"granted_day": "2024-03-31", "granted_time": "02:30", "zone": "Europe/Berlin"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "+01:00" in body
    assert "+02:00" in body
    assert not Decision.objects.filter(request=pending_request).exists()


def test_reject_asks_for_a_note_and_rejects(lead_client, lead, pending_request):
    url = _url("exceptions_exceptionrequest_reject", pending_request.pk)
    assert lead_client.get(url).status_code == 200
    assert lead_client.post(url, {"note": "too late"}).status_code == 302
    decision = Decision.objects.get(request=pending_request)
    assert decision.outcome == "rejected"
    assert decision.note == "too late"
    assert Tracking.objects.get(enhancement=pending_request.enhancement).status == Tracking.Status.REMOVED


def test_a_second_approval_shows_a_conflict_message(lead_client, pending_request):
    url = _url("exceptions_exceptionrequest_approve", pending_request.pk)
    assert lead_client.post(url, {"granted_day": "2024-07-25"}).status_code == 302
    response = lead_client.post(url, {"granted_day": "2024-07-25"}, follow=True)
    assert response.status_code == 200
    assert any("already approved" in m for m in _messages(response))
    assert Decision.objects.filter(request=pending_request).count() == 1


def test_the_requester_cannot_decide_their_own_request(client, lead, code_freeze, kep):
    request = exception_request_submit(
        enhancement=kep,
        milestone=code_freeze,
        requester=lead,
        fields=RequestFields(days=2),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )
    client.force_login(lead)
    url = _url("exceptions_exceptionrequest_approve", request.pk)
    response = client.post(url, {"granted_day": "2024-07-25"}, follow=True)
    assert response.status_code == 200
    assert any("You filed this request" in m for m in _messages(response))
    request.refresh_from_db()
    assert request.state == "pending"


def test_a_staff_user_without_the_release_team_permission_is_refused(client, staff, pending_request):
    staff.groups.add(Group.objects.get(name="Enhancements"))
    client.force_login(staff)
    change = client.get(_url("exceptions_exceptionrequest_change", pending_request.pk))
    assert change.status_code == 200
    assert "Approve…" not in change.content.decode()
    assert client.get(_url("exceptions_exceptionrequest_approve", pending_request.pk)).status_code == 403
    assert client.post(_url("exceptions_exceptionrequest_reject", pending_request.pk), {"note": "x"}).status_code == 403
    changelist = client.get(_url("exceptions_exceptionrequest_changelist"))
    action_form = changelist.context["action_form"]
    actions = [name for name, _ in action_form.fields["action"].choices] if action_form else []
    assert "approve_selected" not in actions
    assert "reject_selected" not in actions
    response = client.post(
        _url("exceptions_exceptionrequest_changelist"),
        {"action": "approve_selected", "_selected_action": [pending_request.pk], "apply": "1"},
    )
    assert response.status_code in (200, 302)
    pending_request.refresh_from_db()
    assert pending_request.state == "pending"


def test_a_release_team_member_can_log_in_with_a_password_and_decide(client, lead, pending_request):
    assert client.login(username="lead", password="pw")
    assert client.get(_url("index")).status_code == 200
    page = client.get(_url("exceptions_exceptionrequest_change", pending_request.pk))
    assert "Approve…" in page.content.decode()
    client.post(_url("exceptions_exceptionrequest_approve", pending_request.pk), {"granted_day": "2024-07-25"})
    pending_request.refresh_from_db()
    assert pending_request.state == "approved"


def test_list_actions_approve_with_per_request_defaults_and_reject_with_a_note(
    lead_client, pending_request, second_kep, code_freeze, requester
):
    other = exception_request_submit(
        enhancement=second_kep,
        milestone=code_freeze,
        requester=requester,
        fields=RequestFields(days=3),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )
    changelist = _url("exceptions_exceptionrequest_changelist")
    page = lead_client.post(changelist, {"action": "approve_selected", "_selected_action": [pending_request.pk]})
    assert page.status_code == 200
    assert f'name="r{pending_request.pk}-granted_day" value="2024-07-25"' in page.content.decode()
    response = lead_client.post(
        changelist,
        {
            "action": "approve_selected",
            "_selected_action": [pending_request.pk],
            "apply": "1",
            f"r{pending_request.pk}-granted_day": "2024-07-25",
        },
    )
    assert response.status_code == 302
    assert Decision.objects.get(request=pending_request).granted_until == dt.datetime(2024, 7, 26, 7, tzinfo=dt.UTC)

    page = lead_client.post(changelist, {"action": "reject_selected", "_selected_action": [other.pk]})
    assert page.status_code == 200
    response = lead_client.post(
        changelist, {"action": "reject_selected", "_selected_action": [other.pk], "apply": "1", "note": "no"}
    )
    assert response.status_code == 302
    other.refresh_from_db()
    assert other.state == "rejected"
    assert other.decision.note == "no"


# ------------------------------------------------------------------ filing, amending, signing off


def test_a_request_filed_in_the_admin_goes_through_the_service(lead_client, kep, code_freeze):
    response = lead_client.post(
        _url("exceptions_exceptionrequest_add"),
        {
            "enhancement": kep.pk,
            "milestone": code_freeze.pk,
            "requester_name": "Jane Doe <jane@example.com>",
            "submitted_at": "2024-07-24 10:00",
            "days": "9",
            "stage": "beta",
            "pr_urls": "https://github.com/kubernetes/kubernetes/pull/1\nhttps://github.com/kubernetes/kubernetes/pull/2",
            "until_text": "EOD Friday CET",
            "until_zone": "Europe/Berlin",
        },
    )
    assert response.status_code == 302, response.context and response.context["errors"]
    request = ExceptionRequest.objects.get(enhancement=kep)
    assert request.submitted_at == dt.datetime(2024, 7, 24, 17, 0, tzinfo=dt.UTC)
    assert request.current.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/1",
        "https://github.com/kubernetes/kubernetes/pull/2",
    ]
    assert AuditLog.objects.filter(object_id=str(request.pk), action="exception.submit").exists()
    page = lead_client.get(_url("exceptions_exceptionrequest_change", request.pk)).content.decode()
    assert "days, not weeks" in page


def test_filing_outside_the_window_shows_the_policy_message(lead_client, kep, code_freeze):
    response = lead_client.post(
        _url("exceptions_exceptionrequest_add"),
        {"enhancement": kep.pk, "milestone": code_freeze.pk, "requester_name": "x", "days": "2",
         "submitted_at": "2024-07-28 10:00"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "request window" in response.content.decode()
    assert not ExceptionRequest.objects.exists()


def test_amending_records_a_revision_and_the_page_shows_the_diff(lead_client, pending_request):
    url = _url("exceptions_exceptionrequest_amend", pending_request.pk)
    form = lead_client.get(url).context["items"][0]["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data["days"] = "3"
    assert lead_client.post(url, data).status_code == 302
    pending_request.refresh_from_db()
    assert pending_request.days == 3
    assert pending_request.revisions.count() == 2
    body = lead_client.get(_url("exceptions_exceptionrequest_change", pending_request.pk)).content.decode()
    assert "days: 2 → 3" in body


def test_sign_off_and_withdraw_buttons_call_the_services(lead_client, pending_request):
    signoff = _url("exceptions_exceptionrequest_signoff", pending_request.pk)
    assert lead_client.post(signoff, {"role": "SIG Node lead", "note": "+1"}).status_code == 302
    response = lead_client.post(signoff, {"role": "SIG Node lead"}, follow=True)
    assert any("already signed off" in m for m in _messages(response))
    withdraw = _url("exceptions_exceptionrequest_withdraw", pending_request.pk)
    assert lead_client.post(withdraw, {"note": "not needed"}).status_code == 302
    pending_request.refresh_from_db()
    assert pending_request.state == "withdrawn"
    body = lead_client.get(_url("exceptions_exceptionrequest_change", pending_request.pk)).content.decode()
    assert "1.31 release team" in body  # the role comes from membership, not from the form
    assert "exception.withdraw" in body


# ------------------------------------------------------------------ audit log


def test_the_audit_log_is_read_only_even_for_a_superuser(su_client, pending_request):
    row = AuditLog.objects.first()
    audit_admin = admin.site._registry[AuditLog]
    request = su_client.get(_url("releasecal_auditlog_changelist")).wsgi_request
    assert not audit_admin.has_add_permission(request)
    assert not audit_admin.has_change_permission(request, row)
    assert not audit_admin.has_delete_permission(request, row)
    assert su_client.get(_url("releasecal_auditlog_add")).status_code == 403
    assert su_client.post(_url("releasecal_auditlog_delete", row.pk), {"post": "yes"}).status_code == 403
    assert su_client.post(_url("releasecal_auditlog_change", row.pk), {"action": "x"}).status_code == 403
    assert AuditLog.objects.get(pk=row.pk).action == row.action


def test_the_audit_log_filters_and_searches(su_client, pending_request, code_freeze):
    changelist = _url("releasecal_auditlog_changelist")
    response = su_client.get(changelist + "?action=exception.submit")
    assert {r.action for r in response.context["cl"].result_list} == {"exception.submit"}
    response = su_client.get(changelist + "?object_type=releasecal.milestone")
    assert {r.object_type for r in response.context["cl"].result_list} == {"releasecal.milestone"}
    response = su_client.get(changelist, {"q": "Code Freeze"})
    assert str(code_freeze.pk) in {r.object_id for r in response.context["cl"].result_list}


def test_wall_time_input_reads_back_to_the_same_instant():
    for instant in (
        dt.datetime(2024, 11, 3, 8, 30, tzinfo=dt.UTC),  # 01:30 PDT, first pass of the fold
        dt.datetime(2024, 11, 3, 9, 30, tzinfo=dt.UTC),  # 01:30 PST, second pass
        dt.datetime(2024, 7, 24, 2, 0, 15, tzinfo=dt.UTC),
    ):
        assert tz.parse_wall_time(tz.wall_time_input(instant, LA), LA) == instant
