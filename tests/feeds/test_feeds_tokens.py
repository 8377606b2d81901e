"""Personal feed tokens in the admin and the API: create, list, rotate, revoke."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from feeds import ical
from feeds.models import FeedToken
from feeds.services import feed_token_create

URL_RE = re.compile(r"http://127\.0\.0\.1:8000/calendar/u/([-\w]+)\.ics")


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def messages_text(response) -> str:
    return " ".join(str(m) for m in response.context["messages"]) if response.context else ""


def test_the_admin_creates_a_token_and_shows_its_url_once(admin_client, release, requester):
    response = admin_client.post("/admin/feeds/feedtoken/add/", {"user": requester.pk, "label": "phone"}, follow=True)
    assert response.status_code == 200
    match = URL_RE.search(messages_text(response))
    assert match, messages_text(response)
    row = FeedToken.objects.get(user=requester)
    assert row.label == "phone"
    assert Client().get(f"/calendar/u/{match[1]}.ics").status_code == 200
    # The list and the change page never show it again.
    listing = admin_client.get("/admin/feeds/feedtoken/").content.decode()
    change = admin_client.get(f"/admin/feeds/feedtoken/{row.pk}/change/").content.decode()
    assert match[1] not in listing
    assert match[1] not in change
    assert row.token_hash not in change


def test_the_admin_rotate_action_replaces_the_url(admin_client, release, requester):
    old = feed_token_create(user=requester)
    response = admin_client.post(
        "/admin/feeds/feedtoken/",
        {"action": "rotate_selected", "_selected_action": [old.row.pk]},
        follow=True,
    )
    match = URL_RE.search(messages_text(response))
    assert match
    assert match[1] != old.token
    assert Client().get(f"/calendar/u/{old.token}.ics").status_code == 404
    assert Client().get(f"/calendar/u/{match[1]}.ics").status_code == 200


def test_the_admin_revoke_action(admin_client, release, requester):
    issued = feed_token_create(user=requester)
    admin_client.post("/admin/feeds/feedtoken/", {"action": "revoke_selected", "_selected_action": [issued.row.pk]})
    assert Client().get(f"/calendar/u/{issued.token}.ics").status_code == 404


def api_client(user: User) -> Client:
    key = Token.objects.create(user=user).key
    return Client(headers={"Authorization": f"Token {key}"})


def test_the_api_creates_lists_and_rotates_my_tokens(release, requester):
    client = api_client(requester)
    created = client.post("/api/v1/feed-tokens/", {"label": "laptop"}, content_type="application/json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["label"] == "laptop"
    assert body["active"] is True
    assert body["url"].endswith(f"/calendar/u/{body['token']}.ics")
    assert Client().get(f"/calendar/u/{body['token']}.ics").status_code == 200

    listed = client.get("/api/v1/feed-tokens/")
    assert listed.status_code == 200
    assert [row["id"] for row in listed.json()] == [body["id"]]
    assert "token" not in listed.json()[0]
    assert body["token"] not in listed.content.decode()

    rotated = client.post(f"/api/v1/feed-tokens/{body['id']}/rotate/")
    assert rotated.status_code == 201
    new = rotated.json()
    assert new["token"] != body["token"]
    assert Client().get(f"/calendar/u/{body['token']}.ics").status_code == 404
    assert Client().get(f"/calendar/u/{new['token']}.ics").status_code == 200
    states = {row["id"]: row["active"] for row in client.get("/api/v1/feed-tokens/").json()}
    assert states == {body["id"]: False, new["id"]: True}

    again = client.post(f"/api/v1/feed-tokens/{body['id']}/rotate/")
    assert again.status_code == 409
    assert "already revoked" in again.json()["message"]


def test_the_api_revokes(release, requester):
    client = api_client(requester)
    body = client.post("/api/v1/feed-tokens/", {}, content_type="application/json").json()
    response = client.post(f"/api/v1/feed-tokens/{body['id']}/revoke/")
    assert response.status_code == 200
    assert response.json()["active"] is False
    assert Client().get(f"/calendar/u/{body['token']}.ics").status_code == 404


def test_the_api_never_touches_someone_elses_token(release, requester, staff):
    theirs = feed_token_create(user=staff)
    response = api_client(requester).post(f"/api/v1/feed-tokens/{theirs.row.pk}/rotate/")
    assert response.status_code == 404
    assert response.json()["message"] == f"You have no feed token #{theirs.row.pk}."
    assert Client().get(f"/calendar/u/{theirs.token}.ics").status_code == 200


def test_the_api_needs_a_login(db):
    assert Client().get("/api/v1/feed-tokens/").status_code in (401, 403)
    assert Client().post("/api/v1/feed-tokens/").status_code in (401, 403)


def test_editing_a_milestone_in_the_admin_bumps_sequence_and_changes_the_etag(admin_client, release, code_freeze):
    """The release form (milestones inline) saves through milestone_save: the feed shows
    the new time with SEQUENCE + 1 under a new ETag in the very next response."""
    from django.urls import reverse

    from tests.releasecal.test_admin import _inline_index, _payload

    feed = Client().get("/calendar/1.31.ics")
    uid = f"UID:releasecal-milestone-{code_freeze.pk}@releasecal.local"
    assert uid in feed.content.decode()
    url = reverse("admin:releasecal_release_change", args=[release.pk])
    payload = _payload(admin_client.get(url))
    payload[f"{_inline_index(payload, code_freeze)}-at"] = "2024-07-23 21:00"
    assert admin_client.post(url, payload).status_code == 302

    after = Client().get("/calendar/1.31.ics", headers={"if-none-match": feed["ETag"]})
    assert after.status_code == 200
    assert after["ETag"] != feed["ETag"]
    text = after.content.decode().replace("\r\n ", "")
    event = next(block for block in text.split("BEGIN:VEVENT") if uid in block)
    assert "DTSTART;TZID=America/Los_Angeles:20240723T210000" in event
    # The milestone's own count plus the writer-format number (feeds/published.py).
    assert f"SEQUENCE:{code_freeze.sequence + 1 + ical.SEQUENCE_FORMAT}" in event
