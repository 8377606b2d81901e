"""The outbox's rules (``outbox.ledger``), tested once for every ledger that uses them:
reminders' deliveries and schedule notices' deliveries, each through its own send and
sweep against a fake Slack on 127.0.0.1, and the GitHub board writes and the KEP issue
comments through theirs against the strict fake GitHub (``tests/support/fake_github``);
all on the real PostgreSQL.

A case's :class:`Service` is where its rows go, as the rules see it: fail its next
requests (a server error, a permanent refusal, a rate limit with Retry-After), count
what it accepted, and say what the row's ``last_error`` reads (each service in its own
words). A fourth ledger joins by adding a case to ``LEDGERS``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.db import connection, transaction

from github import comments as issue_comments
from github import writes as board_writes
from github.models import Board, IssueCommentSetting
from notices import services as notices
from notices.models import NoticeDelivery, ScheduleNotice
from outbox.ledger import Ledger
from releasecal import tz
from reminders import services as reminders
from reminders.models import Delivery
from tests.support.fake_github.limits import SECONDARY_DOC
from tests.support.fake_github.schemas import openapi
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, rule

SERVER_ERROR, PERMANENT_ERROR, RATE_LIMITED = "server error", "permanent error", "rate limited"


@dataclass
class Service:
    """The service a ledger's rows go to, as the rules' tests see it.

    ``fail_next(count, kind, retry_after)``: the next ``count`` requests fail with
    ``kind`` (one of ``SERVER_ERROR``, ``PERMANENT_ERROR``, ``RATE_LIMITED`` with
    Retry-After ``retry_after`` seconds); ``delivered()``: the messages it accepted;
    ``failures_left()``: the scripted failures not yet used (one request each);
    ``errors``: the row's ``last_error`` after each kind (``{seconds}``: Retry-After)."""

    fail_next: Callable[[int, str, int | None], None]
    delivered: Callable[[], int]
    failures_left: Callable[[], int]
    errors: dict[str, str]


@dataclass
class Case:
    """One ledger as its rules see it: rows to a service, due at ``due``."""

    ledger: Ledger
    ids: list[int]
    due: dt.datetime
    send: Callable[[int, dt.datetime], object]  # the ledger's own send of one row
    sweep: Callable[[dt.datetime], object]  # the ledger's own minute sweep
    service: Service

    def row(self, pk: int | None = None):
        return self.ledger.model.objects.get(pk=self.ids[0] if pk is None else pk)

    def fail_next(self, count: int, kind: str, *, retry_after: int | None = None) -> None:
        self.service.fail_next(count, kind, retry_after)

    def delivered(self) -> int:
        return self.service.delivered()

    def failures_left(self) -> int:
        return self.service.failures_left()

    def error(self, kind: str, *, seconds: int | None = None) -> str:
        return self.service.errors[kind].format(seconds=seconds)


# ------------------------------------------------------------------ the services


def _slack(fake_slack) -> Service:
    def fail_next(count: int, kind: str, retry_after: int | None) -> None:
        if kind == SERVER_ERROR:
            fake_slack.fail_next(count, status=503)
        elif kind == PERMANENT_ERROR:
            fake_slack.fail_next(count, status=200, error="channel_not_found")
        else:
            fake_slack.fail_next(count, status=429, retry_after=retry_after)

    return Service(
        fail_next=fail_next,
        delivered=lambda: len(fake_slack.matching(lambda call: call.delivered)),
        failures_left=lambda: len(fake_slack.script),
        errors={
            SERVER_ERROR: "Server error 503",
            PERMANENT_ERROR: "Slack: channel_not_found",
            RATE_LIMITED: "Rate limited by Slack (429): not before {seconds} s later",
        },
    )


def _github(github) -> Service:
    """GitHub's answers as GitHub gives them: a 503 to the GraphQL request; a GraphQL
    ``FORBIDDEN`` error (HTTP 200), the refusal asking again cannot change; the
    secondary rate limit, a 403 with Retry-After and GitHub's message."""

    def fail_next(count: int, kind: str, retry_after: int | None) -> None:
        if kind == SERVER_ERROR:
            github.faults.fail_next(count, status=503, match="graphql")
        elif kind == PERMANENT_ERROR:
            refusal = {
                "type": "FORBIDDEN",
                "path": ["organization"],
                "message": "Resource not accessible by integration",
            }
            github.faults.fail_next(count, status=200, match="graphql", body={"data": None, "errors": [refusal]})
        else:
            github.faults.fail_next(
                count,
                status=403,
                match="graphql",
                headers={"retry-after": str(retry_after)},
                body={
                    "message": "You have exceeded a secondary rate limit and have been temporarily blocked from "
                    "content creation. Please retry your request again later.",
                    "documentation_url": SECONDARY_DOC,
                },
            )

    def delivered() -> int:  # mutation documents that wrote the board
        return sum(
            1
            for r in github.graphql_requests()
            if r.operation == "mutation" and not r.fault and any(call.ok for call in r.mutations)
        )

    return Service(
        fail_next=fail_next,
        delivered=delivered,
        failures_left=lambda: sum(fault.count - fault.used for fault in github.faults.script),
        errors={
            SERVER_ERROR: "GitHub answered 503 (not retried)",
            PERMANENT_ERROR: "GitHub refused the query: FORBIDDEN: Resource not accessible by integration",
            RATE_LIMITED: "Rate limited by GitHub (403): not before {seconds} s later",  # the secondary limit
        },
    )


def _github_rest(github, issue) -> Service:
    """GitHub's answers to a comment's POST as GitHub gives them: a 503; a 404 (the issue
    gone, or the credentials blind to it), which asking again cannot change; the
    secondary rate limit, a 403 with Retry-After and GitHub's message. Delivered: the
    comments on the issue."""
    post = r"POST /repos/kubernetes/enhancements/issues/2400/comments$"

    def fail_next(count: int, kind: str, retry_after: int | None) -> None:
        if kind == SERVER_ERROR:
            github.faults.fail_next(count, status=503, match=post)
        elif kind == PERMANENT_ERROR:
            body = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}
            github.faults.fail_next(count, status=404, match=post, body=body)
        else:
            github.faults.fail_next(
                count,
                status=403,
                match=post,
                headers={"retry-after": str(retry_after)},
                body={
                    "message": "You have exceeded a secondary rate limit and have been temporarily blocked from "
                    "content creation. Please retry your request again later.",
                    "documentation_url": SECONDARY_DOC,
                },
            )

    return Service(
        fail_next=fail_next,
        delivered=lambda: len(issue.comments),
        failures_left=lambda: sum(fault.count - fault.used for fault in github.faults.script),
        errors={
            SERVER_ERROR: "GitHub answered 503 (not retried)",
            PERMANENT_ERROR: "GitHub answered 404 for kubernetes/enhancements#2400: it does not exist or the "
            "credentials cannot see it.",
            RATE_LIMITED: "Rate limited by GitHub (403): not before {seconds} s later",  # the secondary limit
        },
    )


# --------------------------------------------------------------------- the cases


def _reminders(count: int, request) -> Case:
    service = _slack(request.getfixturevalue("fake_slack"))
    for number in range(count):
        rule(channel("slack_bot", channel=f"C0OUTBOX{number}"), offsets="3d")
    release = future_release(freeze_at=hour_from_now(20))
    rows = list(Delivery.objects.filter(milestone=code_freeze_of(release)).order_by("pk"))
    assert len(rows) == count
    return Case(
        ledger=reminders.LEDGER,
        ids=[row.pk for row in rows],
        due=rows[0].due_at,
        send=lambda pk, now: reminders.delivery_send(delivery_id=pk, now=now),
        sweep=lambda now: reminders.deliveries_sweep(now=now, enqueue=lambda _: None),
        service=service,
    )


def _notices(count: int, request) -> Case:
    service = _slack(request.getfixturevalue("fake_slack"))
    release = request.getfixturevalue("release")
    notice = ScheduleNotice.objects.create(
        key="milestone:test:1", kind=ScheduleNotice.Kind.MOVED, release=release, title="1.31: Code Freeze moved",
        lines=["Code Freeze (Kubernetes v1.31) moved."],
    )  # fmt: skip
    rows = [
        NoticeDelivery.objects.create(notice=notice, recipient=f"channel:C0OUTBOX{number}") for number in range(count)
    ]
    return Case(
        ledger=notices.LEDGER,
        ids=[row.pk for row in rows],
        due=tz.utc_now(),
        send=lambda pk, now: notices.notice_send(notice_id=notice.pk, now=now),
        sweep=lambda now: notices.notices_sweep(now=now),
        service=service,
    )


def _board(count: int, request) -> Case:
    """Writes of a request filed for KEP 2400, whose issue is on the 1.31 board: the
    board read-write (as a write needs) and the bot's token allowed to write it."""
    fake = request.getfixturevalue("github")
    swap = request.getfixturevalue("enhancements").issue(
        2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31"
    )
    request.getfixturevalue("project").add_issue(swap)
    board = request.getfixturevalue("board")
    filed = request.getfixturevalue("pending_request")  # the board read-only yet: no write of its own
    board.mode = Board.Mode.READ_WRITE
    board.save()
    request.getfixturevalue("github_settings").GITHUB_TOKEN = fake.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write", "issues": "read"}
    )
    request.getfixturevalue("monkeypatch").setattr(board_writes, "_enqueue", lambda write_id: None)  # no broker
    events = ["submitted"] + [f"amended:{number + 2}" for number in range(count - 1)]
    with transaction.atomic():
        rows = [board_writes.board_write_record(request=filed, event=event) for event in events]
    return Case(
        ledger=board_writes.LEDGER,
        ids=[row.pk for row in rows],
        due=tz.utc_now(),
        send=lambda pk, now: board_writes.board_write_send(write_id=pk, now=now),
        sweep=lambda now: board_writes.board_writes_sweep(now=now),
        service=_github(fake),
    )


def _comments(count: int, request) -> Case:
    """Comments of KEP 2400's issue, the release's setting *post* and the bot's token
    allowed to write issues (each row an event of its own)."""
    fake = request.getfixturevalue("github")
    swap = request.getfixturevalue("enhancements").issue(2400, "Node memory swap support", labels=["lead-opted-in"])
    release = request.getfixturevalue("release")
    openapi()  # the fake's REST description read now, not inside the first POST's timeout
    github_settings = request.getfixturevalue("github_settings")
    github_settings.GITHUB_TIMEOUT = 30  # a loaded machine: a POST timed out but written later is posted twice
    github_settings.GITHUB_TOKEN = fake.token(
        "releasecal-bot", kind="fine-grained", permissions={"issues": "write", "metadata": "read"}
    )
    IssueCommentSetting.objects.create(release=release, mode=IssueCommentSetting.Mode.POST)
    request.getfixturevalue("monkeypatch").setattr(issue_comments, "_enqueue", lambda comment_id: None)  # no broker
    with transaction.atomic():
        rows = [
            issue_comments.issue_comment_record(
                release=release, kep=2400, event="removed", source=f"change:{number}", body=f"Comment {number}\n"
            )
            for number in range(count)
        ]
    return Case(
        ledger=issue_comments.LEDGER,
        ids=[row.pk for row in rows],
        due=tz.utc_now(),
        send=lambda pk, now: issue_comments.issue_comment_send(comment_id=pk, now=now),
        sweep=lambda now: issue_comments.issue_comments_sweep(now=now),
        service=_github_rest(fake, swap),
    )


LEDGERS = {"reminders": _reminders, "notices": _notices, "board": _board, "issue comments": _comments}


@pytest.fixture(params=sorted(LEDGERS))
def make(request, kinds, settings):
    settings.OUTBOX_HTTP_TRIES = 1  # the client's own retry off: the ledger's rules are under test
    return lambda count=1: LEDGERS[request.param](count, request)


# --------------------------------------------------------------------- the claim


def _claimer(case: Case, now: dt.datetime, start: threading.Barrier, claimed: list[list[int]]) -> None:
    """One of two senders claiming the same rows at the same instant, on its own
    database connection."""
    try:
        start.wait()
        claimed.append(case.ledger.claim(case.ids, now=now))
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batch", [1, 3], ids=["one row", "a digest of three"])
def test_two_claimers_at_once_take_each_row_once(make, batch):
    assert connection.vendor == "postgresql"
    case = make(batch)
    for round_number in range(5):
        case.ledger.model.objects.filter(pk__in=case.ids).update(state="pending", claimed_at=None)
        now = case.due + dt.timedelta(seconds=round_number)
        start = threading.Barrier(2)
        claimed: list[list[int]] = []

        threads = [threading.Thread(target=_claimer, args=(case, now, start, claimed)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        taken = sorted(pk for ids in claimed for pk in ids)
        assert taken == sorted(case.ids), claimed  # every row once, none twice
        assert case.ledger.model.objects.filter(pk__in=case.ids, state="sending").count() == batch


@pytest.mark.django_db
def test_a_sent_row_is_never_sent_again(make):
    case = make()
    case.send(case.ids[0], case.due)
    for later in (case.due, case.due + dt.timedelta(days=1)):
        case.send(case.ids[0], later)
        case.sweep(later)
    assert case.row().state == "sent"
    assert case.delivered() == 1


# --------------------------------------------------------------------- the lease


@pytest.mark.django_db
def test_a_row_whose_sender_was_lost_is_claimed_again_after_the_lease(make, settings):
    case = make()
    assert case.ledger.claim(case.ids, now=case.due) == case.ids  # then the worker died
    lease = dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS)
    assert case.ledger.claim(case.ids, now=case.due + lease) == []  # still held
    case.send(case.ids[0], case.due + lease)
    assert case.delivered() == 0
    case.send(case.ids[0], case.due + lease + dt.timedelta(seconds=1))
    row = case.row()
    assert (row.state, row.attempts, case.delivered()) == ("sent", 2, 1)


@pytest.mark.django_db
def test_the_sweep_gives_up_a_row_whose_sender_was_lost_as_often_as_it_may_be_tried(make, settings):
    settings.OUTBOX_MAX_ATTEMPTS = 1
    case = make()
    assert case.ledger.claim(case.ids, now=case.due) == case.ids
    after_lease = case.due + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS + 1)
    assert case.ledger.claim(case.ids, now=after_lease) == []  # no attempt left
    case.sweep(after_lease)
    row = case.row()
    assert (row.state, row.last_error) == ("failed", "Gave up: the sending worker was lost 1 times")
    case.send(case.ids[0], after_lease + dt.timedelta(days=1))
    assert case.delivered() == 0


# ------------------------------------------------------ the backoff and give-up


@pytest.mark.django_db
def test_a_failed_attempt_backs_off_exponentially_and_the_row_gives_up_after_the_bound(make, settings):
    settings.OUTBOX_MAX_ATTEMPTS = 4
    settings.OUTBOX_RETRY_BASE_SECONDS = 60
    settings.OUTBOX_RETRY_MAX_SECONDS = 100
    case = make()
    case.fail_next(100, SERVER_ERROR)
    now = case.due
    # Equal jitter: attempt n waits between half and all of min(cap, base * 2**(n-1)).
    for attempt, ceiling in ((1, 60), (2, 100), (3, 100)):
        case.send(case.ids[0], now)
        row = case.row()
        assert (row.state, row.attempts, row.last_error) == ("pending", attempt, case.error(SERVER_ERROR))
        wait = (row.next_attempt_at - now).total_seconds()
        assert ceiling / 2 <= wait <= ceiling, (attempt, wait)
        case.send(case.ids[0], row.next_attempt_at - dt.timedelta(seconds=1))  # not before its time
        assert case.row().attempts == attempt
        now = row.next_attempt_at
    case.send(case.ids[0], now)
    row = case.row()
    assert (row.state, row.attempts, row.next_attempt_at) == ("failed", 4, None)
    assert row.last_error == f"Gave up after 4 attempts: {case.error(SERVER_ERROR)}"
    case.send(case.ids[0], now + dt.timedelta(days=1))
    case.sweep(now + dt.timedelta(days=1))
    assert case.failures_left() == 100 - 4  # one request per attempt, none after giving up
    assert case.delivered() == 0


@pytest.mark.django_db
def test_a_permanent_error_fails_the_row_at_once(make):
    case = make()
    case.fail_next(1, PERMANENT_ERROR)
    case.send(case.ids[0], case.due)
    row = case.row()
    assert (row.state, row.attempts, row.last_error) == ("failed", 1, case.error(PERMANENT_ERROR))


# ------------------------------------------------------------------ the 429 rule


@pytest.mark.django_db
def test_six_429s_never_fail_a_row_and_it_goes_once_after_them(make, settings):
    settings.OUTBOX_MAX_ATTEMPTS = 3  # fewer than the 429s: none of them counts
    case = make()
    case.fail_next(6, RATE_LIMITED, retry_after=120)
    now = case.due
    for _ in range(6):
        case.send(case.ids[0], now)
        row = case.row()
        assert (row.state, row.attempts) == ("pending", 0)
        assert row.last_error == case.error(RATE_LIMITED, seconds=120)
        assert row.next_attempt_at == now + dt.timedelta(seconds=120)  # waits for Retry-After
        case.send(case.ids[0], now + dt.timedelta(seconds=119))  # and not before
        now = row.next_attempt_at
    assert case.failures_left() == 0
    case.send(case.ids[0], now)
    row = case.row()
    assert (row.state, row.attempts, row.last_error) == ("sent", 1, "")
    assert case.delivered() == 1
