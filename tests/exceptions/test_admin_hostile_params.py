"""Hostile query strings on the exception request list: a filter value the admin cannot
read is its usual "?e=1" redirect (a 4xx-class answer the changelist explains), never a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

LIST = "/admin/exceptions/exceptionrequest/"


@pytest.fixture
def su_client(db) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.mark.parametrize("value", ["abc", "%C2%B2", "1.5", "%20"])
def test_a_milestone_filter_that_is_not_a_number_redirects_to_the_error_list(su_client, pending_request, value):
    response = su_client.get(f"{LIST}?milestone__id__exact={value}")
    assert (response.status_code, response["Location"]) == (302, f"{LIST}?e=1")


def test_the_milestone_filter_still_filters(su_client, pending_request):
    mine = su_client.get(f"{LIST}?milestone__id__exact={pending_request.milestone_id}")
    other = su_client.get(f"{LIST}?milestone__id__exact={pending_request.milestone_id + 1000}")
    assert (mine.status_code, other.status_code) == (200, 200)
    assert mine.context["cl"].result_count == 1
    assert other.context["cl"].result_count == 0


@pytest.mark.parametrize("query", ["waited=abc", "waiting=abc", "sig=%3C%21channel%3E", "state=nope", "q=KEP-%25"])
def test_other_hostile_parameters_are_no_500(su_client, pending_request, query):
    assert su_client.get(f"{LIST}?{query}").status_code in (200, 302)
