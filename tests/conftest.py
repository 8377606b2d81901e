"""Shared fixtures: a demo-shaped release built through the services."""

from __future__ import annotations

import datetime as dt
import os
import warnings

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from exceptions.services import RequestFields, exception_request_submit
from releasecal import tz
from releasecal.models import MilestoneKind, Release
from releasecal.services import (
    enhancement_upsert,
    groups_ensure,
    milestone_create,
    milestone_kinds_ensure,
    tracking_set,
)
from tests.support import isolation
from tests.support.fake_slack import FakeSlack
from tests.support.github_oauth import fake_github, oauth_app  # noqa: F401 (fixtures for every test)
from tests.support.slack import SIGNING_SECRET

# CI (CI=true): new examples every run (a fresh machine has no example database to keep),
# a fixed budget where a test names none, no deadline (a loaded machine is slow, not
# wrong), and on failure the blob to replay it; .ci/run prints the --hypothesis-seed.
hypothesis_settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=False,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
if os.environ.get("CI", "").lower() == "true":
    hypothesis_settings.load_profile("ci")


# Slack's per-channel limit (outbox.ratelimit) is off in tests unless a test turns it
# on (settings.OUTBOX_SLACK_CHANNEL_RATE, and the same in a worker's env): with it on,
# every test that sends twice to one fake channel would wait a second per message. The
# environment reaches the workers and servers tests start.
os.environ["OUTBOX_SLACK_CHANNEL_RATE"] = "0"


@pytest.fixture(autouse=True)
def _migrated_rows_back_after_a_flush(request, django_db_blocker):
    """A transactional test's database is flushed after it, taking the milestone kinds
    and groups the migrations made; the tests that run next in the same process expect
    them (in one process the order happened to hide this; pytest-xdist's does not). Put
    them back after every transactional test (a flush runs in its fixture's teardown,
    before this one's)."""
    yield
    names = request.fixturenames
    if "transactional_db" in names or "live_server" in names:
        with django_db_blocker.unblock():
            milestone_kinds_ensure()
            groups_ensure()


@pytest.fixture(autouse=True)
def _slack_channel_rate_off(settings):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 0


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and before it is dropped, any session still
    connected to it closed: a connection a test's thread or child process left open made
    the drop fail ("being accessed by other users": 1 in each of two concurrent runs)
    and left the run's database behind. What was still connected is shown as a warning."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, application_name, state, left(query, 120) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        others = cursor.fetchall()
        for pid, *_ in others:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    connection.close()
    if others:  # shown in the run's warnings summary
        warnings.warn(f"closed {len(others)} session(s) still connected to the test database: {others}", stacklevel=1)


@pytest.fixture(scope="session", autouse=True)
def redis_sentinels():
    """Keys of another prefix and another Redis database, and a message in another
    queue, planted before the first test: each must survive the whole suite (no
    FLUSHDB, no cache.clear(), no purge of queues that are not the test's own)."""
    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis"):
        yield None
        return
    sentinels = isolation.plant(url)
    yield sentinels
    gone = isolation.missing(sentinels)
    isolation.remove(sentinels)
    assert not gone, f"the suite removed what was not its own: {gone}"


@pytest.fixture
def kinds(db) -> dict[str, MilestoneKind]:
    # Transactional tests flush what the data migration created: re-create it.
    groups_ensure()
    return milestone_kinds_ensure()


@pytest.fixture
def release(db, kinds) -> Release:
    """1.31-like: LA zone, enhancements freeze 19:00 PDT Thu 13 June 2024, code freeze
    02:00 UTC Wed 24 July 2024 (19:00 PDT Tue 23 July), rc.0 on 2024-07-30 (timed)."""
    release = Release.objects.create(
        slug="1.31", name="Kubernetes v1.31", zone="America/Los_Angeles",
        start_date=dt.date(2024, 5, 13), ga_date=dt.date(2024, 8, 13), status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["enhancements-freeze"], title="Enhancements Freeze",
        at=tz.parse_wall_time("2024-06-13 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze",
        at=tz.parse_wall_time("2024-07-23 19:00", "America/Los_Angeles"),
        ends_at=tz.parse_wall_time("2024-08-07 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["rc"], title="1.31.0-rc.0 released",
        at=tz.parse_wall_time("2024-07-30 10:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["ga"], title="v1.31 released", on_date=dt.date(2024, 8, 13))
    return release


@pytest.fixture
def code_freeze(release):
    return release.milestones.get(kind__slug="code-freeze")


@pytest.fixture
def enhancements_freeze(release):
    return release.milestones.get(kind__slug="enhancements-freeze")


@pytest.fixture
def kep(db, release):
    enhancement = enhancement_upsert(
        number=2400, title="Node memory swap support", owning_sig="node",
        participating_sigs=["node"], owners=[{"github": "kannon92", "email": "kep2400@example.com"}],
    )  # fmt: skip
    tracking_set(release=release, enhancement=enhancement, stage="beta", status="tracked")
    return enhancement


@pytest.fixture
def requester(db) -> User:
    return User.objects.create_user("requester", "requester@example.com", "pw")


@pytest.fixture
def release_team_member(kinds, release) -> User:
    """On the 1.31 release team (deciding is per release), and in the "Release Team"
    group for the admin's permissions."""
    user = User.objects.create_user("lead", "lead@example.com", "pw")
    user.groups.add(Group.objects.get(name="Release Team"))
    release.team.add(user)
    return user


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("staff", "staff@example.com", "pw", is_staff=True)


@pytest.fixture
def pending_request(kep, code_freeze, requester):
    return exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=requester,
        fields=RequestFields(days=2, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )  # fmt: skip


@pytest.fixture
def fake_slack(settings):
    """A fake Slack Web API on 127.0.0.1, wired into the settings of one test."""
    with FakeSlack(ts="1721780000.000100") as fake:
        settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
        settings.SLACK_BOT_TOKEN = "xoxb-test"
        settings.SLACK_API_URL = fake.api_url
        settings.SLACK_RELEASE_TEAM_CHANNEL = "C0RELEASE"
        yield fake


@pytest.fixture
def eager_celery():
    """Run queued tasks inline (only inside these tests)."""
    from config.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


# Worker tests (tests/reminders, tests/notices): a real Celery worker on Redis.
@pytest.fixture
def celery_queue(request):
    """A Celery queue of this test's own, named after its module."""
    from tests.support.reminder_workers import own_queue

    with own_queue(request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")) as queue:
        yield queue


@pytest.fixture
def broker(celery_queue):
    """The Redis broker's URL (PostgreSQL and Redis required); the test's queue is
    emptied afterwards, and nothing else."""
    from tests.support.pg import require_postgres
    from tests.support.reminder_workers import purge_broker
    from tests.support.reminders_helpers import redis_url_or_skip

    require_postgres()
    url = redis_url_or_skip("CELERY_BROKER_URL")
    yield url
    purge_broker(url, celery_queue)


@pytest.fixture
def workers(tmp_path, celery_queue):
    """``workers(**kwargs)`` starts a worker on the test's queue and waits until it
    answers a ping; every worker started is stopped afterwards."""
    from tests.support.reminder_workers import Worker

    started = []

    def start(**kwargs):
        worker = Worker(log_dir=tmp_path, queue=celery_queue, **kwargs)
        started.append(worker)
        return worker.wait_ready()

    yield start
    for worker in started:
        worker.stop()
