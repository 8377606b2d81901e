"""Following a request up: its liaison, the links the integrations know, and the end of
its granted time (the workflow after the decision; ``exceptions.services`` is the
workflow up to it).

- Every request has a **liaison** from the moment it arrives: a member of its release's
  team, by default the release's Enhancements Lead (``Release.enhancements_lead``), else
  the release's first lead (``releasecal.selectors.release_liaison_default``). A lead of
  the release (or its Enhancements Lead) changes it.
- The Slack thread and the board item of a request are told by the integrations that
  know them (``slack_integration``, ``github``); the domain keeps them to show.
- When a granted deadline passes, beat's minute sweep records its end once per grant
  (``GrantEnd``, one per decision) and sends ``exception_grant_ended``; the liaison then
  re-evaluates the KEP: "Tracked for <freeze>" or "Removed From Milestone", which sets
  the KEP's tracking status and sends ``exception_grant_reevaluated``.
"""

from __future__ import annotations

import datetime as dt

from django.db import IntegrityError, transaction

from exceptions import signals
from exceptions.models import Decision, ExceptionRequest, GrantEnd
from exceptions.selectors import effective_deadline
from exceptions.services import _set_tracking_status
from releasecal import tz
from releasecal.errors import Conflict, NotAllowed, ValidationFailed
from releasecal.models import Tracking
from releasecal.selectors import release_team_includes
from releasecal.services import audit_record

# A grant that ended longer ago than this when the sweep first sees it (a grant of a
# past cycle, an imported record) is history, not something to re-evaluate now.
GRANT_END_LOOKBACK = dt.timedelta(days=3)

# The freeze a KEP is tracked for again after its grant, in the handbook's words
# ("Tracked For Code Freeze"); code and test freeze share one.
TRACKED_FOR = {
    "prr-freeze": "PRR freeze",
    "enhancements-freeze": "enhancements freeze",
    "code-freeze": "code freeze",
    "test-freeze": "code freeze",
    "docs-freeze": "docs freeze",
}


def _user_label(user) -> str:
    return user.get_username() if user is not None else "nobody"


# ------------------------------------------------------------------ the liaison


def can_change_liaison(request: ExceptionRequest, user) -> bool:
    """A lead of the request's release, its Enhancements Lead, or a superuser."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    release = request.release
    return user.is_superuser or release.enhancements_lead_id == user.pk or release.leads.filter(pk=user.pk).exists()


@transaction.atomic
def exception_request_liaison_set(*, request: ExceptionRequest, liaison, actor) -> ExceptionRequest:
    """Make ``liaison`` (a member of the release's team) the request's liaison. Only a lead
    of the release or its Enhancements Lead may (NotAllowed, 403); someone off the team is
    refused (ValidationFailed, 400). Sends ``exception_request_liaison_changed`` in the
    transaction (the board writes the ``Exception Liaison``)."""
    request = ExceptionRequest.objects.select_for_update(of=("self",)).select_related("release").get(pk=request.pk)
    release = request.release
    if not can_change_liaison(request, actor):
        raise NotAllowed(f"Only a {release.slug} release lead or its Enhancements Lead can change a request's liaison.")
    if liaison is None or not release_team_includes(release, liaison):
        raise ValidationFailed(
            f"{_user_label(liaison)} is not on the {release.slug} release team (its leads and team): "
            "a liaison must be.",
            extra={"liaison": _user_label(liaison) if liaison is not None else None},
        )
    if request.liaison_id == liaison.pk:
        return request
    before = request.liaison.get_username() if request.liaison_id else None
    request.liaison = liaison
    request.save(update_fields=["liaison", "updated_at"])
    change = audit_record(
        action="exception.liaison",
        obj=request,
        actor=actor,
        before={"liaison": before},
        after={"liaison": liaison.get_username()},
    )
    signals.exception_request_liaison_changed.send(sender=ExceptionRequest, request=request, change=change.pk)
    return request


# ------------------------------------------------------------------ the integrations' links


@transaction.atomic
def exception_request_slack_thread_set(*, request_id: int, url: str) -> bool:
    """Keep the release team's Slack thread of a request (once: the first post's). Sends
    ``exception_request_slack_thread_linked`` when it is new; False when it was known."""
    if not url.startswith("https://"):
        raise ValidationFailed("A Slack thread is an https:// link.", extra={"url": url[:200]})
    if not ExceptionRequest.objects.filter(pk=request_id, slack_thread_url="").update(slack_thread_url=url[:500]):
        return False
    request = ExceptionRequest.objects.select_related("release").get(pk=request_id)
    signals.exception_request_slack_thread_linked.send(sender=ExceptionRequest, request=request)
    return True


def exception_request_board_item_set(*, request_id: int, url: str) -> None:
    """Keep the address of the request's item on the release's GitHub board."""
    ExceptionRequest.objects.filter(pk=request_id).exclude(board_item_url=url[:500]).update(board_item_url=url[:500])


# ------------------------------------------------------------------ the end of a grant


def tracked_label(request: ExceptionRequest) -> str:
    """ "Tracked for code freeze": the outcome that keeps the KEP in the release."""
    return f"Tracked for {TRACKED_FOR.get(request.milestone.kind.slug, request.milestone.title)}"


REMOVED_LABEL = "Removed From Milestone"


def grant_end_text(grant_end: GrantEnd) -> str:
    """The liaison's notice: "The time granted to KEP-1880 ended at 00:00 AoE Friday 11 December 2026 (12:00 UTC
    Friday 11 December 2026): re-evaluate" (every face says it in these words; a
    sentence ends it with its own full stop)."""
    number, ended = grant_end.request.enhancement.number, tz.render(grant_end.ended_at, grant_end.ended_zone)
    return f"The time granted to KEP-{number} ended at {ended}: re-evaluate"


def exception_grants_end(*, now: dt.datetime | None = None) -> list[GrantEnd]:
    """Record the end of every approved grant whose time passed (within
    ``GRANT_END_LOOKBACK``), once per grant: a ``GrantEnd`` per decision, unique, each in
    its own transaction with ``exception_grant_ended`` (the liaison's notice joins the
    reminder ledger there). A grant the freeze superseded ends nothing (the freeze's own
    deadline applies). Called by beat's minute sweep; a second call finds nothing."""
    now = now or tz.utc_now()
    due = (
        Decision.objects.filter(
            outcome=Decision.Outcome.APPROVED,
            request__state=ExceptionRequest.State.APPROVED,
            granted_until__lte=now,
            granted_until__gte=now - GRANT_END_LOOKBACK,
            grant_end__isnull=True,
        )
        .order_by("granted_until", "pk")
        .values_list("pk", flat=True)[:200]
    )
    recorded = []
    for decision_id in list(due):
        with transaction.atomic():
            decision = (
                Decision.objects.select_for_update(of=("self",))
                .select_related("request__milestone__kind", "request__enhancement", "request__release")
                .get(pk=decision_id)
            )
            request = decision.request
            if effective_deadline(milestone=request.milestone, request=request).superseded:
                continue
            try:
                with transaction.atomic():
                    grant_end = GrantEnd.objects.create(
                        decision=decision,
                        request=request,
                        ended_at=decision.granted_until,
                        ended_zone=decision.granted_zone,
                        recorded_at=now,
                    )
            except IntegrityError:
                continue  # recorded by another sweep: theirs is the one
            signals.exception_grant_ended.send(sender=ExceptionRequest, request=request, grant_end=grant_end)
            recorded.append(grant_end)
    return recorded


@transaction.atomic
def exception_grant_reevaluate(*, grant_end: GrantEnd, outcome: str, actor, note: str = "") -> GrantEnd:
    """The liaison's (or any release-team member's) re-evaluation of a KEP whose granted
    time ended: ``tracked`` sets its tracking status back to Tracked, ``removed`` to
    Removed From Milestone (it missed the freeze its request was for). Once: a second
    outcome is a Conflict (409). Sends ``exception_grant_reevaluated`` in the transaction
    (the board writes the KEP's Status)."""
    grant_end = (
        GrantEnd.objects.select_for_update(of=("self",))
        .select_related("request__release", "request__milestone__kind", "request__enhancement")
        .get(pk=grant_end.pk)
    )
    request = grant_end.request
    if outcome not in GrantEnd.Outcome.values:
        raise ValidationFailed(
            f"The outcome is one of {', '.join(GrantEnd.Outcome.values)}.", extra={"outcome": str(outcome)[:40]}
        )
    if not release_team_includes(request.release, actor):
        raise NotAllowed(
            f"Only the {request.release.slug} release team can re-evaluate KEP-{request.enhancement.number}."
        )
    if grant_end.outcome:
        shown = tracked_label(request) if grant_end.outcome == GrantEnd.Outcome.TRACKED else REMOVED_LABEL
        raise Conflict(
            f"KEP-{request.enhancement.number} was already re-evaluated after its grant: {shown}.",
            extra={"outcome": grant_end.outcome},
        )
    status = Tracking.Status.TRACKED if outcome == GrantEnd.Outcome.TRACKED else Tracking.Status.REMOVED
    _set_tracking_status(request, status)
    grant_end.outcome = outcome
    grant_end.resolved_by = actor
    grant_end.resolved_at = tz.utc_now()
    grant_end.save(update_fields=["outcome", "resolved_by", "resolved_at"])
    audit_record(
        action="exception.grant_reevaluated",
        obj=request,
        actor=actor,
        before={"tracking": Tracking.Status.EXCEPTION_APPROVED},
        after={"outcome": outcome, "tracking": status, "note": note},
    )
    signals.exception_grant_reevaluated.send(sender=ExceptionRequest, request=request, grant_end=grant_end)
    return grant_end
