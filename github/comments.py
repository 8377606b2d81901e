"""The KEP issues' comments: the handbook's texts (``../shared/data/k8s-board/README.md``,
"The lifecycle the handbook prescribes" and "Other recurring comments"), composed here
once for every face, and the fourth ledger of the outbox, ``IssueComment``.

Each text greets the KEP's owners by handle, names the release's milestone (``v1.31``)
and ends with the prow commands the handbook prescribes, one a line, as prow reads them.
A row is keyed (KEP, event, source): one event is commented once however often it is
heard, and a sweep run twice finds its rows made. Per release
(``IssueCommentSetting``): off, none is composed; list, the row waits in the cockpit for
a person to post it by hand (copy, then "posted"); post, it is posted through the
outbox's machinery (claim, backoff, give-up, the 429 rule) by ``issue_comment_send``.

A posted body ends with a marker (``<!-- releasecal:comment:<id> -->``, invisible on
GitHub, ignored by prow): a send that retries (a reply lost after GitHub had written)
reads the issue's comments first and records the one it finds instead of posting again.
"""

from __future__ import annotations

import datetime as dt
import logging
import re

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from exceptions.models import Decision
from github import client as github_client
from github.client import BoardClient, GitHubUnavailable
from github.models import IssueComment, IssueCommentSetting
from outbox.errors import TransportError
from outbox.ledger import Ledger
from releasecal import tz

log = logging.getLogger(__name__)

LEDGER = Ledger(model=IssueComment, name="issue-comments")
SEND_TASK = "github.issue_comment_send"
DEFAULT_REPOSITORY = "kubernetes/enhancements"

REMOVE_COMMANDS = ["/remove-label tracked/yes", "/label tracked/no", "/milestone clear"]
TRACKING_LABELS = ("lead-opted-in", "tracked/yes", "tracked/no")


def milestone_name(slug: str) -> str:
    """The GitHub milestone of a release: ``1.31`` is ``v1.31``."""
    return slug if slug.startswith("v") else f"v{slug}"


def greeting(handles: list[str], slug: str) -> str:
    """ "Hello @alice @bob 👋, v1.31 Enhancements team here." (handles in order, once each
    in any case; no handle known: "Hello 👋, ...")."""
    seen: dict[str, str] = {}
    for handle in handles:
        handle = handle.strip().lstrip("@")
        if handle and handle.lower() not in seen:
            seen[handle.lower()] = handle
    names = "".join(f" @{h}" for h in seen.values())
    return f"Hello{names} 👋, {milestone_name(slug)} Enhancements team here."


def _text(handles: list[str], slug: str, paragraphs: list[str], commands: list[str]) -> str:
    parts = [greeting(handles, slug), *paragraphs]
    if commands:
        parts.append("\n".join(commands))
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------- the texts


def text_rejected(*, handles: list[str], slug: str, kep: int, freeze: str) -> str:
    """Lifecycle step 2, rejected: the removal commands."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"The exception request for KEP-{kep} ({freeze}) was rejected by the release team, so this enhancement "
            f"is removed from the {v} milestone. If you still wish to progress it, it can be opted in for a later "
            "release (the `lead-opted-in` label and that release's milestone, set by a SIG lead)."
        ],
        REMOVE_COMMANDS,
    )


def text_grant_missed(*, handles: list[str], slug: str, kep: int, freeze: str, granted_until: str) -> str:
    """Lifecycle step 3, missed: the removal commands."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"The exception granted to KEP-{kep} for {freeze}, until {granted_until}, has ended and the requirements "
            f"were not met, so this enhancement is removed from the {v} milestone. If you still wish to progress "
            "it, it can be opted in for a later release (the `lead-opted-in` label and that release's milestone, "
            "set by a SIG lead)."
        ],
        REMOVE_COMMANDS,
    )


def text_grant_met(*, handles: list[str], slug: str, kep: int, freeze: str, granted_until: str) -> str:
    """Lifecycle step 3, requirements met (the liaison's re-evaluation): the re-add commands."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"The exception granted to KEP-{kep} for {freeze}, until {granted_until}, has ended and the requirements "
            f"were met, so this enhancement is tracked for {v}."
        ],
        ["/label tracked/yes", "/remove-label tracked/no", f"/milestone {v}"],
    )


def text_readded(*, handles: list[str], slug: str, kep: int) -> str:
    """Lifecycle step 3, requirements met: the re-add commands."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [f"KEP-{kep} meets the requirements again and is tracked for {v}."],
        ["/label tracked/yes", "/remove-label tracked/no", f"/milestone {v}"],
    )


def text_removed(*, handles: list[str], slug: str, kep: int, missed: str) -> str:
    v = milestone_name(slug)
    because = f" (it missed {missed})" if missed else ""
    return _text(
        handles,
        slug,
        [
            f"KEP-{kep} is removed from the {v} milestone{because}. If you still wish to progress it, it can be "
            "opted in for a later release (the `lead-opted-in` label and that release's milestone, set by a SIG "
            "lead)."
        ],
        REMOVE_COMMANDS,
    )


def text_deferred(*, handles: list[str], slug: str, kep: int) -> str:
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"KEP-{kep} is deferred to a later release by its SIG, so it is removed from the {v} milestone. A SIG "
            "lead opts it in again for the release it is planned for (the `lead-opted-in` label and that release's "
            "milestone)."
        ],
        REMOVE_COMMANDS,
    )


def text_opt_in_reminder(*, handles: list[str], slug: str) -> str:
    """Cycle start: an open issue in the milestone without ``lead-opted-in``."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"This issue is in the {v} milestone but is not labelled `lead-opted-in`, so it is not tracked for {v}. "
            f"If this enhancement is planned for {v}, a lead of its SIG opts it in by commenting "
            "`/label lead-opted-in`; if it is not, please clear its milestone (`/milestone clear`)."
        ],
        [],
    )


def text_cleanup_closed(*, handles: list[str], slug: str, labels: list[str]) -> str:
    """Cycle end, a closed issue: it loses the tracking labels it has."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [f"{v} is released and this issue is closed: removing its tracking labels."],
        [f"/remove-label {label}" for label in labels],
    )


def text_cleanup_close(*, handles: list[str], slug: str, kep: int, labels: list[str]) -> str:
    """Cycle end, stable and kep.yaml ``implemented``: labels removed, closed."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"KEP-{kep} graduated to stable and its kep.yaml says `status: implemented`: congratulations! "
            f"With {v} released, this issue is done, so we remove its tracking labels and close it."
        ],
        [*(f"/remove-label {label}" for label in labels), "/close"],
    )


def text_cleanup_ask(*, handles: list[str], slug: str, kep: int, status: str) -> str:
    """Cycle end, stable but kep.yaml not yet ``implemented``: a request to update it."""
    v = milestone_name(slug)
    said = f"`status: {status}`" if status else "no status"
    return _text(
        handles,
        slug,
        [
            f"KEP-{kep} graduated to stable in {v}, but its kep.yaml still says {said}. Please open a PR to "
            "kubernetes/enhancements setting `status: implemented` in its kep.yaml; once it merges, this issue can "
            "be closed."
        ],
        [],
    )


def text_cleanup_clear(*, handles: list[str], slug: str, next_slug: str, labels: list[str], milestone: str) -> str:
    """Cycle end, every other issue: ``lead-opted-in``, ``tracked/*`` and the milestone
    cleared, with how to opt in next cycle."""
    v, nxt = milestone_name(slug), milestone_name(next_slug)
    commands = [f"/remove-label {label}" for label in labels]
    if milestone:
        commands.append("/milestone clear")
    return _text(
        handles,
        slug,
        [
            f"With {v} released, we clear this issue's tracking labels and milestone. If this enhancement is "
            f"planned for {nxt}, a lead of its SIG opts it in again: `/label lead-opted-in` and `/milestone {nxt}`."
        ],
        commands,
    )


def text_correction(*, handles: list[str], slug: str, kep: int, earlier_url: str, now: str, reason: str) -> str:
    """A follow-up to a removal comment whose decision was corrected (approved after
    all, or reopened: pending again): the KEP is back in the milestone, the re-add
    commands."""
    v = milestone_name(slug)
    return _text(
        handles,
        slug,
        [
            f"A correction to [our earlier comment]({earlier_url}): the release team corrected its decision on the "
            f"exception request for KEP-{kep} ({reason}). The request is {now}, so this enhancement is back in the "
            f"{v} milestone and the commands of that comment no longer apply."
        ],
        ["/label tracked/yes", "/remove-label tracked/no", f"/milestone {v}"],
    )


# ------------------------------------------------------------------- recording


def comment_setting(release) -> IssueCommentSetting:
    """The release's setting (made, as ``list``, the first time it is asked)."""
    setting, _ = IssueCommentSetting.objects.get_or_create(release=release)
    return setting


_ISSUE_URL = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+)/issues/(\d+)/?$")


def kep_issue(enhancement, setting: IssueCommentSetting) -> tuple[str, int]:
    """The KEP's issue: its issue URL's, or the setting's repository and its number."""
    found = _ISSUE_URL.match(enhancement.issue_url or "")
    if found:
        return found.group(1), int(found.group(2))
    return setting.repository or DEFAULT_REPOSITORY, enhancement.number


def kep_handles(enhancement) -> list[str]:
    """The owners' handles (the KEP's owners, then its kep.yaml authors), in order."""
    owners = [o.github for o in enhancement.owners.order_by("id") if o.github]
    authors = [p.github for p in enhancement.people.filter(role="author").order_by("position")]
    return owners + authors


def issue_comment_record(
    *,
    release,
    kep: int,
    event: str,
    source: str,
    body: str,
    repository: str = DEFAULT_REPOSITORY,
    issue_number: int | None = None,
    corrects: IssueComment | None = None,
) -> IssueComment | None:
    """The comment of ``event`` (in the caller's transaction): listed or queued on
    commit as the release's setting says; None when it is off. An event recorded before
    is that row, unchanged (``one_issue_comment_per_event``)."""
    setting = comment_setting(release)
    if setting.mode == IssueCommentSetting.Mode.OFF:
        return None
    existing = IssueComment.objects.filter(kep=kep, event=event, source=source).first()
    if existing is not None:
        return existing
    state = IssueComment.State.PENDING if setting.mode == IssueCommentSetting.Mode.POST else IssueComment.State.LISTED
    try:
        with transaction.atomic():
            comment = IssueComment.objects.create(
                release=release,
                kep=kep,
                repository=repository,
                issue_number=issue_number or kep,
                event=event,
                source=source,
                body=body,
                state=state,
                corrects=corrects,
            )
    except IntegrityError:  # recorded meanwhile by another process: that row
        return IssueComment.objects.get(kep=kep, event=event, source=source)
    if state == IssueComment.State.PENDING:
        transaction.on_commit(lambda: _enqueue(comment.pk), robust=True)
    return comment


def _enqueue(comment_id: int) -> None:
    current_app.tasks[SEND_TASK].delay(comment_id)


def decision_source(request) -> str:
    """The source of a decision's comment: ``request:<id>``; after a reopen (the request
    decided anew), ``request:<id>:after:<the reopen's number>``, a new event."""
    last = request.decision_corrections.order_by("-number").values_list("number", flat=True).first()
    return f"request:{request.pk}" if last is None else f"request:{request.pk}:after:{last}"


def request_sources(request_id: int) -> Q:
    """The sources of a request's own comments (``request:12``, ``request:12:...``; not
    ``request:123``)."""
    return Q(source=f"request:{request_id}") | Q(source__startswith=f"request:{request_id}:")


def comment_for_decision(*, request, decision) -> IssueComment | None:
    """A rejection's comment (an approval has none: the KEP stays in the milestone)."""
    if decision.outcome != "rejected":
        return None
    setting = comment_setting(request.release)
    if setting.mode == IssueCommentSetting.Mode.OFF:
        return None
    enhancement = request.enhancement
    repository, number = kep_issue(enhancement, setting)
    if request.decision_corrections.exists():  # decided anew after a reopen
        _supersede_listed(
            request,
            now="rejected",
            note=f"Not to post: KEP-{enhancement.number}'s request, reopened, was decided anew: rejected.",
        )
    body = text_rejected(
        handles=kep_handles(enhancement),
        slug=request.release.slug,
        kep=enhancement.number,
        freeze=request.milestone.title,
    )
    return issue_comment_record(
        release=request.release,
        kep=enhancement.number,
        event=IssueComment.Event.REJECTED,
        source=decision_source(request),
        body=body,
        repository=repository,
        issue_number=number,
    )


def _ended_grant(tracking, at: dt.datetime):
    """The approved request of the KEP in the release whose grant had ended by ``at``
    (the latest such), else None."""
    return (
        Decision.objects.filter(
            request__release_id=tracking.release_id,
            request__enhancement_id=tracking.enhancement_id,
            outcome="approved",
            granted_until__lte=at,
        )
        .select_related("request__milestone")
        .order_by("-granted_until")
        .first()
    )


def comment_for_tracking(*, tracking, previous: str, change_id: int) -> IssueComment | None:
    """A tracking change's comment: removed (after an ended grant: the grant was
    missed), deferred, or tracked again after being out of the milestone."""
    setting = comment_setting(tracking.release)
    if setting.mode == IssueCommentSetting.Mode.OFF:
        return None
    enhancement, slug = tracking.enhancement, tracking.release.slug
    handles, kep = kep_handles(enhancement), enhancement.number
    out = ("removed_from_milestone", "deferred")
    source = f"change:{change_id}"
    if tracking.status == "removed_from_milestone":
        grant = _ended_grant(tracking, tz.utc_now())
        if grant is not None:
            event = IssueComment.Event.GRANT_MISSED
            source = decision_source(grant.request)
            body = text_grant_missed(
                handles=handles,
                slug=slug,
                kep=kep,
                freeze=grant.request.milestone.title,
                granted_until=tz.render_deadline(grant.granted_until, grant.granted_zone or tracking.release.zone),
            )
        else:
            event = IssueComment.Event.REMOVED
            missed = tracking.missed_freeze.title if tracking.missed_freeze_id else ""
            body = text_removed(handles=handles, slug=slug, kep=kep, missed=missed)
    elif tracking.status == "deferred":
        event, body = IssueComment.Event.DEFERRED, text_deferred(handles=handles, slug=slug, kep=kep)
    elif previous in out and tracking.status not in out:
        event, body = IssueComment.Event.READDED, text_readded(handles=handles, slug=slug, kep=kep)
    else:
        return None
    repository, number = kep_issue(enhancement, setting)
    return issue_comment_record(
        release=tracking.release,
        kep=kep,
        event=event,
        source=source,
        body=body,
        repository=repository,
        issue_number=number,
    )


def comment_for_reevaluation(*, request, grant_end) -> IssueComment | None:
    """The liaison's re-evaluation of a KEP whose grant ended
    (``exceptions.signals.exception_grant_reevaluated``): requirements met, the re-add
    commands (``grant-met``); missed, the removal commands (``grant-missed``, keyed as a
    removal after the grant is: one comment for the request's missed grant either way)."""
    setting = comment_setting(request.release)
    if setting.mode == IssueCommentSetting.Mode.OFF or grant_end.outcome not in ("tracked", "removed"):
        return None
    enhancement, slug = request.enhancement, request.release.slug
    text = text_grant_met if grant_end.outcome == "tracked" else text_grant_missed
    body = text(
        handles=kep_handles(enhancement),
        slug=slug,
        kep=enhancement.number,
        freeze=request.milestone.title,
        granted_until=tz.render_deadline(grant_end.ended_at, grant_end.ended_zone or request.release.zone),
    )
    repository, number = kep_issue(enhancement, setting)
    return issue_comment_record(
        release=request.release,
        kep=enhancement.number,
        event=IssueComment.Event.GRANT_MET if grant_end.outcome == "tracked" else IssueComment.Event.GRANT_MISSED,
        source=decision_source(request),
        body=body,
        repository=repository,
        issue_number=number,
    )


def comments_for_correction(*, request, correction, old: dict, new: dict | None, reason: str) -> list[IssueComment]:
    """What a corrected decision (``exceptions.signals.exception_decision_corrected``)
    does to the KEP issue: a rejection corrected away (approved after all, or reopened)
    follows each removal comment posted (or being posted) for the request with a
    correction (one per earlier comment and correction); a decision corrected to a
    rejection is commented as a rejection, once per correction. A comment of the request
    still listed (never posted) that the correction makes wrong is superseded instead:
    it leaves the list, so nobody posts it."""
    was, now = old.get("outcome"), (new or {}).get("outcome")
    if was == now:
        return []
    setting = comment_setting(request.release)
    if setting.mode == IssueCommentSetting.Mode.OFF:
        return []
    enhancement, slug = request.enhancement, request.release.slug
    said = {"rejected": "rejected", "approved": "approved"}.get(now or "", "pending again")
    _supersede_listed(
        request,
        now=now,
        note=f"Not to post: the decision on KEP-{enhancement.number}'s request was corrected "
        f"(correction {correction.number}: {reason}); the request is {said}.",
    )
    if now == "rejected":
        repository, number = kep_issue(enhancement, setting)
        body = text_rejected(
            handles=kep_handles(enhancement), slug=slug, kep=enhancement.number, freeze=request.milestone.title
        )
        made = issue_comment_record(
            release=request.release,
            kep=enhancement.number,
            event=IssueComment.Event.REJECTED,
            source=f"request:{request.pk}:correction:{correction.number}",
            body=body,
            repository=repository,
            issue_number=number,
        )
        return [made] if made else []
    if was != "rejected":
        return []
    earlier_ones = IssueComment.objects.filter(
        request_sources(request.pk), kep=enhancement.number, event=IssueComment.Event.REJECTED
    ).filter(
        state__in=[
            IssueComment.State.SENT,
            IssueComment.State.POSTED_BY_HAND,
            IssueComment.State.PENDING,
            IssueComment.State.SENDING,
        ]
    )  # posted, or posting: a listed one was never posted
    made = []
    for earlier in earlier_ones:
        body = text_correction(
            handles=kep_handles(enhancement),
            slug=slug,
            kep=enhancement.number,
            earlier_url=earlier.comment_url or earlier.issue_url,
            now="approved" if now == "approved" else "pending again",
            reason=reason,
        )
        comment = issue_comment_record(
            release=request.release,
            kep=earlier.kep,
            event=IssueComment.Event.CORRECTION,
            source=f"comment:{earlier.pk}:correction:{correction.number}",
            body=body,
            repository=earlier.repository,
            issue_number=earlier.issue_number,
            corrects=earlier,
        )
        if comment is not None:
            made.append(comment)
    return made


def _supersede_listed(request, *, now: str | None, note: str) -> int:
    """The request's listed comments a change of its decision makes wrong, superseded:
    its removal comments when it is not rejected any more; the corrections announcing it
    back in the milestone when it is rejected again."""
    kep = request.enhancement.number
    listed = IssueComment.objects.filter(kep=kep, state=IssueComment.State.LISTED)
    if now == "rejected":
        removals = IssueComment.objects.filter(request_sources(request.pk), kep=kep, event=IssueComment.Event.REJECTED)
        wrong = listed.filter(event=IssueComment.Event.CORRECTION, corrects__in=removals)
    else:
        wrong = listed.filter(request_sources(request.pk), event=IssueComment.Event.REJECTED)
    return wrong.update(state=IssueComment.State.SUPERSEDED, superseded_note=note[:500], updated_at=tz.utc_now())


# ------------------------------------------------------------------- posting


def marker(comment: IssueComment) -> str:
    return f"<!-- releasecal:comment:{comment.pk} -->"


def posted_body(comment: IssueComment) -> str:
    """What is posted: the text, then the marker a retry finds it by."""
    return f"{comment.body}\n{marker(comment)}"


def _transport_error(exc: GitHubUnavailable) -> TransportError:
    return TransportError(
        exc.message,
        permanent=exc.permanent,
        retry_after=exc.retry_after,
        rate_limited=exc.retry_after is not None,
        status=exc.status,  # GitHub's own (a 403 for the secondary limit), said in last_error
    )


def issue_comment_send(*, comment_id: int, client: BoardClient | None = None, now: dt.datetime | None = None) -> str:
    """Claim, post and record one comment; what happened ("sent", "retry", "failed",
    "rate-limited", "not claimed")."""
    now = now or tz.utc_now()
    if LEDGER.claim([comment_id], now=now) != [comment_id]:
        return "not claimed"
    comment = IssueComment.objects.get(pk=comment_id)
    owner, _, repo = comment.repository.partition("/")
    try:
        # Not retried inside the send (a retried POST whose reply was lost would post
        # twice): the ledger retries the whole send, which looks for the marker first.
        github = client or github_client.board_client(retries=0)
        if github is None:
            raise GitHubUnavailable("No GitHub credentials are set (docs/github.md)", permanent=True)
        found = None
        if comment.attempts > 1:
            found = github.issue_comment_find(owner, repo, comment.issue_number, marker(comment))
        posted = found or github.issue_comment_create(owner, repo, comment.issue_number, posted_body(comment))
    except GitHubUnavailable as exc:
        return LEDGER.record_failure([comment], _transport_error(exc), now=now, service="GitHub")
    LEDGER.held([comment_id], now=now).update(comment_url=posted["html_url"], comment_id=posted["id"])
    LEDGER.record_sent([comment_id], now=now)
    return "sent"


def issue_comments_sweep(*, now: dt.datetime | None = None) -> list[int]:
    """Beat's minute sweep: comments whose worker was lost go back to pending, and every
    comment that may go now is queued."""
    now = now or tz.utc_now()
    LEDGER.reclaim_expired(now=now)
    quiet = now - dt.timedelta(seconds=settings.OUTBOX_REQUEUE_SECONDS)
    due = list(
        IssueComment.objects.filter(LEDGER.claimable(now), updated_at__lt=quiet).values_list("pk", flat=True)[:500]
    )
    for comment_id in due:
        try:
            _enqueue(comment_id)
        except Exception:  # the broker is down: the next sweep tries again
            log.warning("could not queue issue comment %s", comment_id, exc_info=True)
            break
    return due


def issue_comment_mark_posted(*, comment_ids: list[int], actor) -> int:
    """The cockpit's "posted" mark: listed comments a person posted by hand."""
    return IssueComment.objects.filter(pk__in=comment_ids, state=IssueComment.State.LISTED).update(
        state=IssueComment.State.POSTED_BY_HAND,
        marked_by=(actor.get_username() if actor is not None else "")[:150],
        sent_at=tz.utc_now(),
        updated_at=tz.utc_now(),
    )


def issue_comment_retry(*, comment_ids: list[int]) -> int:
    """The admin's Retry: failed comments back to pending, queued on commit."""
    now = tz.utc_now()
    with transaction.atomic():
        ids = list(
            IssueComment.objects.filter(pk__in=comment_ids, state=IssueComment.State.FAILED).values_list(
                "pk", flat=True
            )
        )
        IssueComment.objects.filter(pk__in=ids).update(
            state=IssueComment.State.PENDING, attempts=0, next_attempt_at=None, last_error="", updated_at=now
        )
        for comment_id in ids:
            transaction.on_commit(lambda comment_id=comment_id: _enqueue(comment_id), robust=True)
    return len(ids)
