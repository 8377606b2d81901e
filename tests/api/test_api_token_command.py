from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def run(*args) -> str:
    out = StringIO()
    call_command("api_token", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_it_prints_the_same_token_until_rotated(requester):
    first = run("requester")
    assert first == Token.objects.get(user=requester).key
    assert run("requester") == first
    rotated = run("requester", "--rotate")
    assert rotated != first
    assert not Token.objects.filter(key=first).exists()


def test_the_printed_token_authenticates_writes(requester, pending_request):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {run('requester')}")
    response = client.post(f"/api/v1/exceptions/{pending_request.pk}/withdraw/", {}, format="json")
    assert response.status_code == 200


def test_an_unknown_user_is_a_clear_error(db):
    with pytest.raises(CommandError, match="No user 'ghost'"):
        run("ghost")
