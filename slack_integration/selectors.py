"""Who a Slack user is here: the one lookup every Slack face uses (commands, buttons, the
request modal, the Home tab, the link flow).

A Slack identity is a user id *in a workspace* (team id): a row matches a Slack request
only when its team id is the request's, so the same user id from another workspace is
not taken for the linked account. A row whose team id is empty (entered in the admin
without one, or made by ``/relcal tz`` before the team was recorded) matches any
workspace, as before; the admin asks for the team id.
"""

from __future__ import annotations

from django.db.models import Q

from slack_integration.models import SlackIdentity


def slack_identity_find(
    *, slack_user_id: str, team_id: str, linked: bool = False, lock: bool = False
) -> SlackIdentity | None:
    """The identity of Slack user ``slack_user_id`` of workspace ``team_id``, or None;
    ``linked``: only one tied to a releasecal account. The row with the team id wins
    over one without."""
    if not slack_user_id:
        return None
    rows = SlackIdentity.objects.select_related("user").filter(slack_user_id=slack_user_id)
    rows = rows.filter(Q(team_id=team_id) | Q(team_id="")) if team_id else rows.filter(team_id="")
    if linked:
        rows = rows.filter(user__isnull=False)
    if lock:
        rows = rows.select_for_update(of=("self",))
    found = list(rows[:2])
    return next((row for row in found if row.team_id), found[0] if found else None)
