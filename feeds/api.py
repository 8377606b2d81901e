"""API for personal feed tokens: list, create, rotate, revoke (the caller's own only).

The plain token and its URL are in the response to create and rotate, once; listing
never shows them (only the hash is stored).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error_responses
from feeds.models import FeedToken
from feeds.selectors import feed_tokens_of
from feeds.services import IssuedFeedToken, feed_token_create, feed_token_revoke, feed_token_rotate
from releasecal import tz
from releasecal.errors import NotFound


class FeedTokenOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    active = serializers.BooleanField(source="is_active")
    created_at = serializers.SerializerMethodField()
    last_used_at = serializers.SerializerMethodField()
    revoked_at = serializers.SerializerMethodField()
    replaced_by = serializers.IntegerField(source="replaced_by_id", allow_null=True)

    def _utc(self, value):
        return tz.isoformat_utc(value) if value else None

    def get_created_at(self, obj) -> str:
        return self._utc(obj.created_at)

    def get_last_used_at(self, obj) -> str | None:
        return self._utc(obj.last_used_at)

    def get_revoked_at(self, obj) -> str | None:
        return self._utc(obj.revoked_at)


class IssuedFeedTokenOutputSerializer(FeedTokenOutputSerializer):
    token = serializers.CharField(help_text="The secret; shown only in this response")
    url = serializers.CharField(help_text="The feed URL to subscribe to; shown only in this response")


def _issued(issued: IssuedFeedToken) -> dict:
    data = FeedTokenOutputSerializer(issued.row).data
    return {**data, "token": issued.token, "url": issued.url}


def _own(request: Request, token_id: int) -> FeedToken:
    row = feed_tokens_of(user=request.user).filter(pk=token_id).first()
    if row is None:
        raise NotFound(f"You have no feed token #{token_id}.", extra={"id": token_id})
    return row


class FeedTokenListCreateApi(APIView):
    permission_classes = [IsAuthenticated]

    class InputSerializer(serializers.Serializer):
        label = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")

    @extend_schema(responses={200: FeedTokenOutputSerializer(many=True), **error_responses(401)})
    def get(self, request: Request) -> Response:
        return Response(FeedTokenOutputSerializer(feed_tokens_of(user=request.user), many=True).data)

    @extend_schema(
        request=InputSerializer, responses={201: IssuedFeedTokenOutputSerializer, **error_responses(400, 401)}
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        issued = feed_token_create(user=request.user, label=data.validated_data["label"], actor=request.user)
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class FeedTokenRotateApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={201: IssuedFeedTokenOutputSerializer, **error_responses(401, 404, 409)})
    def post(self, request: Request, token_id: int) -> Response:
        issued = feed_token_rotate(feed_token=_own(request, token_id), actor=request.user)
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class FeedTokenRevokeApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: FeedTokenOutputSerializer, **error_responses(401, 404)})
    def post(self, request: Request, token_id: int) -> Response:
        row = feed_token_revoke(feed_token=_own(request, token_id), actor=request.user)
        return Response(FeedTokenOutputSerializer(row).data)
