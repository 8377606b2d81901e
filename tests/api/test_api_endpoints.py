"""The /api/v1/ contract: instants as x / x_local / x_viewer, filters, errors, the workflow."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest
from releasecal import tz
from releasecal.services import enhancement_upsert, tracking_set
from tests.support.paths import ROOT


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def frozen_now(monkeypatch):
    """Pretend it is 12:00 UTC on 1 July 2024, inside the 1.31 cycle."""
    now = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC)
    monkeypatch.setattr(tz, "utc_now", lambda: now)
    return now


# ------------------------------------------------------------------ time fields


def test_milestone_instants_come_in_utc_and_in_their_native_zone(anon, code_freeze):
    body = anon.get("/api/v1/milestones/", {"kind": "code-freeze"}).json()
    row = body["results"][0]
    assert row["at"] == "2024-07-24T02:00:00Z"
    assert row["at_local"] == {
        "datetime": "2024-07-23T19:00:00-07:00",
        "timezone": "America/Los_Angeles",
        "abbreviation": "PDT",
        "display": "19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)",
    }
    assert row["deadline"] == "2024-07-24T02:00:00Z"
    assert "at_viewer" not in row


def test_it_adds_the_viewer_zone_when_tz_is_given(anon, code_freeze):
    row = anon.get("/api/v1/milestones/", {"kind": "code-freeze", "tz": "Europe/Berlin"}).json()["results"][0]
    assert row["at_viewer"]["abbreviation"] == "CEST"
    assert row["at_viewer"]["datetime"] == "2024-07-24T04:00:00+02:00"
    assert row["deadline_viewer"]["timezone"] == "Europe/Berlin"


def test_it_rejects_an_unknown_viewer_zone_with_the_time_module_message(anon, release):
    response = anon.get("/api/v1/milestones/", {"tz": "Mars/Olympus"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("Unknown time zone 'Mars/Olympus'")
    assert response.json()["extra"] == {"zone": "Mars/Olympus"}


def test_a_date_only_milestone_has_no_at_but_a_deadline_at_end_of_day(anon, release):
    row = anon.get("/api/v1/releases/1.31/milestones/", {"kind": "ga"}).json()["results"][0]
    assert row["at"] is None
    assert row["at_local"] is None
    assert row["on_date"] == "2024-08-13"
    assert row["deadline"] == "2024-08-14T07:00:00Z"  # end of 13 Aug in Los Angeles
    assert row["is_all_day"] is True


# -------------------------------------------------------------------- reads


def test_release_detail_lists_its_milestones(anon, release):
    body = anon.get("/api/v1/releases/1.31/").json()
    assert body["slug"] == "1.31"
    assert [m["kind"] for m in body["milestones"]] == ["enhancements-freeze", "code-freeze", "rc", "ga"]


def test_an_unknown_release_is_a_404_with_a_message(anon, db):
    response = anon.get("/api/v1/releases/9.99/")
    assert response.status_code == 404
    assert response.json() == {"message": "No release '9.99'.", "extra": {"release": "9.99"}}


def test_enhancements_filter_by_release_and_sig(anon, kep, release):
    other = enhancement_upsert(number=1880, title="Multiple Service CIDRs", owning_sig="network",
                               participating_sigs=["network", "node"])  # fmt: skip
    tracking_set(release=release, enhancement=other, stage="beta", status="tracked")
    enhancement_upsert(number=9, title="Untracked", owning_sig="apps")
    numbers = [e["number"] for e in anon.get("/api/v1/enhancements/", {"release": "1.31"}).json()["results"]]
    assert numbers == [1880, 2400]
    numbers = [e["number"] for e in anon.get("/api/v1/enhancements/", {"sig": "node"}).json()["results"]]
    assert numbers == [1880, 2400]
    numbers = [e["number"] for e in anon.get("/api/v1/enhancements/", {"sig": "network"}).json()["results"]]
    assert numbers == [1880]


def test_an_unknown_kep_is_a_404(anon, db):
    response = anon.get("/api/v1/enhancements/99999/")
    assert response.status_code == 404
    assert response.json()["message"] == "No KEP 99999 is known."


def test_bad_filter_values_are_a_400_not_a_500(anon, pending_request):
    for params in ({"state": "maybe"}, {"kep": "abc"}, {"milestone": "-1"}, {"kep": str(2**70)}):
        response = anon.get("/api/v1/exceptions/", params)
        assert response.status_code == 400, params
        assert set(response.json()) == {"message", "extra"}
    assert anon.get("/api/v1/milestones/", {"upcoming": "perhaps"}).status_code == 400


def test_exception_list_filters_and_orders(anon, pending_request):
    assert anon.get("/api/v1/exceptions/", {"state": "pending", "kep": 2400}).json()["count"] == 1
    assert anon.get("/api/v1/exceptions/", {"state": "approved"}).json()["count"] == 0
    assert anon.get("/api/v1/exceptions/", {"sig": "node", "release": "1.31"}).json()["count"] == 1
    assert anon.get("/api/v1/exceptions/", {"kind": "enhancements-freeze"}).json()["count"] == 0
    assert anon.get("/api/v1/exceptions/", {"ordering": "-days"}).status_code == 200


# --------------------------------------------------------------- deadlines/next


def test_next_deadline_of_a_release(anon, release, frozen_now):
    body = anon.get("/api/v1/deadlines/next/", {"release": "1.31"}).json()
    assert body["now"] == "2024-07-01T12:00:00Z"
    assert body["next"]["kind"] == "code-freeze"
    assert body["next"]["deadline_local"]["display"] == (
        "19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)"
    )
    assert [d["kind"] for d in body["deadlines"]] == ["code-freeze", "rc", "ga"]


def test_next_deadline_of_a_kep_applies_its_granted_extension(anon, pending_request, release_team_member, frozen_now):
    client_for(release_team_member).post(f"/api/v1/exceptions/{pending_request.pk}/approve/", {}, format="json")
    body = anon.get("/api/v1/deadlines/next/", {"kep": 2400, "tz": "Asia/Kolkata"}).json()
    assert body["next"]["source"] == "exception"
    assert body["next"]["exception_id"] == pending_request.pk
    assert body["next"]["keps"] == [2400]
    assert body["next"]["deadline"] == "2024-07-26T07:00:00Z"
    assert body["next"]["original_deadline"] == "2024-07-24T02:00:00Z"
    assert body["next"]["deadline_viewer"]["abbreviation"] == "IST"
    # The SIG view shows the same extension for the KEP.
    sig = anon.get("/api/v1/deadlines/next/", {"sig": "node", "release": "1.31"}).json()
    assert sig["next"]["source"] == "exception"


def test_next_deadline_for_an_unknown_kep_is_a_404(anon, release):
    response = anon.get("/api/v1/deadlines/next/", {"kep": 4242})
    assert response.status_code == 404
    assert response.json()["extra"] == {"kep": 4242}


# ----------------------------------------------------------------- the workflow


def test_a_request_goes_from_filing_to_approval_through_the_api(kep, code_freeze, requester, release_team_member):
    filed = client_for(release_team_member).post(
        "/api/v1/exceptions/",
        {
            "kep": 2400, "release": "1.31", "kind": "code-freeze", "days": 3, "stage": "beta", "sig": "node",
            "reason": "Last PR in review", "submitted_at": "2024-07-24T10:00:00Z", "requester_name": "kannon92",
        },
        format="json",
    )  # fmt: skip
    assert filed.status_code == 201, filed.json()
    body = filed.json()
    assert body["state"] == "pending"
    assert body["requester"] == "kannon92"
    assert body["submitted_at_local"]["abbreviation"] == "PDT"
    assert body["default_granted_until"] == "2024-07-27T07:00:00Z"
    amended = client_for(release_team_member).patch(f"/api/v1/exceptions/{body['id']}/", {"days": 2}, format="json")
    assert amended.status_code == 200
    assert [r["days"] for r in amended.json()["revisions"]] == [2, 3]
    assert amended.json()["current"]["reason"] == "Last PR in review"  # unchanged fields carried over
    # Entered for a name that is no user and no email author: someone else on the team decides.
    second = User.objects.create_user("second-lead")
    code_freeze.release.team.add(second)
    approved = client_for(second).post(
        f"/api/v1/exceptions/{body['id']}/approve/",
        {"granted_until": "2024-07-25 18:00", "note": "ok"},
        format="json",
    )
    assert approved.status_code == 200, approved.json()
    decision = approved.json()["decision"]
    assert decision["granted_until"] == "2024-07-26T01:00:00Z"
    assert decision["granted_until_local"]["display"] == (
        "18:00 PDT Thursday 25 July 2024 (01:00 UTC Friday 26 July 2024)"
    )
    assert approved.json()["effective_deadline"] == "2024-07-26T01:00:00Z"


def test_a_second_approval_is_a_409(pending_request, release_team_member):
    client = client_for(release_team_member)
    assert client.post(f"/api/v1/exceptions/{pending_request.pk}/approve/", {}, format="json").status_code == 200
    again = client.post(f"/api/v1/exceptions/{pending_request.pk}/approve/", {}, format="json")
    assert again.status_code == 409
    assert again.json() == {
        "message": f"Exception request #{pending_request.pk} is already approved; it cannot be approved.",
        "extra": {"state": "approved"},
    }


def test_a_granted_until_in_a_dst_fold_is_a_400_naming_both_offsets(release, kinds, requester, release_team_member):
    # A November freeze so that 01:30 on 3 Nov 2024 (fall back in Los Angeles) is a candidate.
    from exceptions.services import RequestFields, exception_request_submit
    from releasecal.services import milestone_create

    release.hard_stop = dt.datetime(2024, 12, 1, tzinfo=dt.UTC)
    release.save()
    freeze = milestone_create(release=release, kind=kinds["docs-freeze"], title="Docs Freeze",
                              at=tz.parse_wall_time("2024-11-01 19:00", "America/Los_Angeles"))  # fmt: skip
    kep = enhancement_upsert(number=3000, title="Something", owning_sig="docs")
    request = exception_request_submit(enhancement=kep, milestone=freeze, requester=requester,
                                       fields=RequestFields(days=3), submitted_at=freeze.deadline)  # fmt: skip
    client = client_for(release_team_member)
    url = f"/api/v1/exceptions/{request.pk}/approve/"
    fold = client.post(url, {"granted_until": "2024-11-03 01:30"}, format="json")
    assert fold.status_code == 400
    assert "-07:00" in fold.json()["message"]
    assert "-08:00" in fold.json()["message"]
    assert fold.json()["extra"]["field"] == "granted_until"
    gap = client.post(url, {"granted_until": "2025-03-09 02:30", "granted_zone": "America/New_York"}, format="json")
    assert gap.status_code == 400
    assert "-05:00" in gap.json()["message"]
    assert "-04:00" in gap.json()["message"]
    assert client.post(url, {"granted_until": "2024-11-03 01:30-08:00"}, format="json").status_code == 200
    assert ExceptionRequest.objects.get(pk=request.pk).decision.granted_until == dt.datetime(
        2024, 11, 3, 9, 30, tzinfo=dt.UTC
    )


def test_a_bad_granted_zone_is_a_400(pending_request, release_team_member):
    response = client_for(release_team_member).post(
        f"/api/v1/exceptions/{pending_request.pk}/approve/", {"granted_zone": "Atlantis/Central"}, format="json"
    )
    assert response.status_code == 400
    assert "Unknown time zone" in response.json()["message"]


def test_filing_for_an_unknown_kep_is_a_400(requester, code_freeze):
    response = client_for(requester).post(
        "/api/v1/exceptions/", {"kep": 77777, "milestone": code_freeze.pk, "days": 2}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"message": "No KEP 77777 is known.", "extra": {"kep": 77777}}


def test_policy_messages_are_the_services_messages(requester, kep, code_freeze):
    response = client_for(requester).post(
        "/api/v1/exceptions/", {"kep": 2400, "milestone": code_freeze.pk, "days": 0}, format="json"
    )
    assert response.status_code == 400
    # 0 days (an admission) is for PRR and enhancements freezes only; the service says so.
    assert response.json()["message"] == (
        "A Code Freeze exception must ask for at least 1 day; asking for no time (admission only) is for "
        "enhancements-freeze and prr-freeze requests."
    )
    late = client_for(requester).post(
        "/api/v1/exceptions/", {"kep": 2400, "milestone": code_freeze.pk, "days": 2}, format="json"
    )
    assert late.status_code == 400
    assert late.json()["message"].startswith("The request window for Code Freeze closed at ")


def test_only_the_release_team_may_backdate_a_request(requester, kep, code_freeze):
    response = client_for(requester).post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": code_freeze.pk, "days": 2, "submitted_at": "2024-07-24T10:00:00Z"},
        format="json",
    )
    assert response.status_code == 403
    assert response.json()["extra"] == {"fields": ["submitted_at"]}


def test_validation_errors_have_the_error_shape(requester, code_freeze):
    response = client_for(requester).post("/api/v1/exceptions/", {"milestone": "x"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["message"].split(":")[0] in {"kep", "milestone", "days"}
    assert set(body["extra"]["fields"]) >= {"kep", "milestone", "days"}


def test_malformed_json_is_a_400(requester, db):
    response = client_for(requester).post("/api/v1/exceptions/", b"{nope", content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["message"]


def test_parse_returns_fields_and_saves_nothing(anon, db):
    from pathlib import Path

    text = Path("/work/shared/data/exception-emails/example-code-freeze.txt")
    if not text.exists():
        text = next(ROOT.glob("**/example-code-freeze.txt"), None)
    assert text is not None
    response = anon.post("/api/v1/exceptions/parse/", {"text": text.read_text()}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["kep_number"] == 2400
    assert body["milestone_kind"] == "code-freeze"
    assert body["fields"]["days"] == 2
    assert ExceptionRequest.objects.count() == 0


def test_anonymous_writes_get_a_401_with_the_token_scheme(anon, pending_request):
    response = anon.post(f"/api/v1/exceptions/{pending_request.pk}/approve/", {}, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["message"] == "Authentication credentials were not provided."


def test_schema_and_docs_are_served(anon, db):
    schema = anon.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/v1/deadlines/next/", "/api/v1/exceptions/{request_id}/approve/", "/api/v1/exceptions/parse/"):
        assert path in text
    assert "ExceptionApproveInput" in text
    assert "granted_until_local" in text
    assert anon.get("/api/docs/").status_code == 200


def test_an_unknown_api_path_is_a_json_404_even_for_a_post(anon, db):
    response = anon.post("/api/v1/exceptions/abc/approve/", {}, format="json")
    assert response.status_code == 404
    assert response.json() == {"message": "No such API endpoint.", "extra": {"path": "/api/v1/exceptions/abc/approve/"}}


def test_bad_paging_is_a_400(anon, release):
    assert anon.get("/api/v1/milestones/", {"limit": "10" * 20}).status_code == 400
    assert anon.get("/api/v1/milestones/", {"offset": "-1"}).status_code == 400
    assert anon.get("/api/v1/milestones/", {"limit": "2"}).json()["results"].__len__() == 2


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/exceptions/?ordering=nonsense",
        "/api/v1/exceptions/?ordering=-days,password",
        "/api/v1/exceptions/?ordering=,",
        "/api/v1/releases/?ordering=slugg",
        "/api/v1/milestones/?ordering=requester__password",
    ],
)
def test_an_unknown_ordering_is_a_400_naming_the_accepted_ones(release, path):
    # Issue 13 item 14: DRF ignores unknown terms silently; a typo looked like a sorted list.
    response = APIClient().get(path)
    assert response.status_code == 400, response.content
    assert response.json()["message"].startswith("Unknown ordering ")
    assert response.json()["extra"]["ordering"]


def test_a_known_ordering_still_sorts(release, pending_request):
    assert APIClient().get("/api/v1/exceptions/?ordering=-days,id").status_code == 200
    slugs = [r["slug"] for r in APIClient().get("/api/v1/releases/?ordering=-slug").json()["results"]]
    assert slugs == sorted(slugs, reverse=True)
