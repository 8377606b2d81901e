"""The database triggers that keep the feed version (``feeds.models.FeedVersion``) in
step with every table a feed shows.

Each covered table has a trigger that, after any INSERT, UPDATE or DELETE (and
TRUNCATE on PostgreSQL), sets the version row to a new random value. The trigger runs
inside the writing statement's transaction, so the version changes exactly when the
change does: a rolled-back write leaves it unchanged, a committed one is visible to
readers together with its new version. It sees every way a write can come in through
the database (ORM saves, ``QuerySet.update``, bulk writes, m2m, raw SQL, the admin,
``psql``); only a session that disables triggers (``session_replication_role =
replica``, a restore with ``--disable-triggers``) bypasses it: run
``manage.py feeds_bump`` after such writes.

Which tables: every table of the apps in ``COVERED_APPS`` (m2m tables included),
except the models in ``NOT_SHOWN``. A table added later to one of these apps is covered
without anyone doing anything: the ``post_migrate`` handler (``FeedsConfig.ready``)
installs the trigger on every covered table that lacks it after each ``migrate`` (and
re-installs it after SQLite rebuilds a table to alter it). To cover an app whose data a
feed starts to show, add it to ``COVERED_APPS``; to leave out a model a feed never
shows and that is written often, add it to ``NOT_SHOWN`` (a missing exclusion only
costs a rebuilt feed, a missing table a stale one). ``auth_user`` is not covered: the
only user field a feed shows, the personal feed's username, is part of its cache key.

PostgreSQL: one statement-level trigger per table (one new value per statement, however
many rows). SQLite has only row-level triggers: one per table and event.
"""

from __future__ import annotations

import uuid

from django.db import connections

COVERED_APPS = ("releasecal", "exceptions", "feeds", "people")  # people: the GitHub handles choose "my KEPs"
NOT_SHOWN = frozenset(
    {
        "releasecal.AuditLog",  # never shown; written beside the changes it records
        "feeds.FeedToken",  # the token is looked up on every request; last_used_at is written by feed polls
        "feeds.FeedVersion",  # the version itself
        # What the last build published, per UID (feeds/published.py): every build of one
        # version records the same values, so it must not start a new version.
        "feeds.PublishedEvent",
    }
)
VERSION_TABLE = "feeds_feedversion"
TRIGGER = "feeds_version_bump"  # PostgreSQL: the function and every table's trigger

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION feeds_version_bump() RETURNS trigger AS $$
BEGIN
    UPDATE feeds_feedversion SET version = replace(gen_random_uuid()::text, '-', '') WHERE id = 1;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""
PG_TRIGGER = (
    'CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "{table}" '
    "FOR EACH STATEMENT EXECUTE FUNCTION {trigger}()"
)
SQLITE_EVENTS = ("INSERT", "UPDATE", "DELETE")
SQLITE_TRIGGER = (
    'CREATE TRIGGER IF NOT EXISTS "{name}" AFTER {event} ON "{table}" FOR EACH ROW BEGIN '
    "UPDATE feeds_feedversion SET version = lower(hex(randomblob(16))) WHERE id = 1; END"
)


def new_version() -> str:
    return uuid.uuid4().hex


def covered_tables(apps) -> list[str]:
    """The tables of the covered apps' models (``apps``: the app registry, or a
    migration's historical one), minus the models no feed shows."""
    tables = set()
    for label in COVERED_APPS:
        try:
            config = apps.get_app_config(label)
        except LookupError:  # a migration's registry before that app's first migration
            continue
        for model in config.get_models(include_auto_created=True):
            if model._meta.label not in NOT_SHOWN and model._meta.managed and not model._meta.proxy:
                tables.add(model._meta.db_table)
    return sorted(tables)


def _sqlite_name(table: str, event: str) -> str:
    return f"feeds_version_{table}_{event.lower()}"


def tables_with_trigger(connection) -> set[str]:
    """The tables that carry the version trigger (every event of it, on SQLite)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname = %s AND NOT t.tgisinternal AND pg_table_is_visible(c.oid)",
                [TRIGGER],
            )
            return {row[0] for row in cursor.fetchall()}
        if connection.vendor == "sqlite":
            cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
            names = {(row[0], row[1]) for row in cursor.fetchall()}
            return {
                table
                for table, _ in names
                if all((table, _sqlite_name(table, event)) in names for event in SQLITE_EVENTS)
            }
    raise NotImplementedError(f"feed version triggers for {connection.vendor}")


def install(connection, tables: list[str]) -> list[str]:
    """Put the trigger on those of ``tables`` that exist and lack it; return them.
    Idempotent. Makes sure the version row exists."""
    existing = set(connection.introspection.table_names())
    if VERSION_TABLE not in existing:
        return []
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {VERSION_TABLE} WHERE id = 1")  # noqa: S608 (a constant)
        if cursor.fetchone() is None:
            cursor.execute(f"INSERT INTO {VERSION_TABLE} (id, version) VALUES (1, %s)", [new_version()])  # noqa: S608
    present = tables_with_trigger(connection)
    missing = [t for t in tables if t in existing and t not in present]
    if not missing:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(PG_FUNCTION)
            for table in missing:
                cursor.execute(f'DROP TRIGGER IF EXISTS {TRIGGER} ON "{table}"')
                cursor.execute(PG_TRIGGER.format(trigger=TRIGGER, table=table))
        elif connection.vendor == "sqlite":
            for table in missing:
                for event in SQLITE_EVENTS:
                    cursor.execute(SQLITE_TRIGGER.format(name=_sqlite_name(table, event), event=event, table=table))
        else:
            raise NotImplementedError(f"feed version triggers for {connection.vendor}")
    return missing


def uninstall(connection, tables: list[str], *, function: bool = False) -> None:
    """Drop the trigger from ``tables`` (and the PostgreSQL function with ``function``)."""
    with connection.cursor() as cursor:
        for table in tables:
            if connection.vendor == "postgresql":
                cursor.execute(f'DROP TRIGGER IF EXISTS {TRIGGER} ON "{table}"')
            else:
                for event in SQLITE_EVENTS:
                    cursor.execute(f'DROP TRIGGER IF EXISTS "{_sqlite_name(table, event)}"')
        if function and connection.vendor == "postgresql":
            cursor.execute(f"DROP FUNCTION IF EXISTS {TRIGGER}()")


def on_post_migrate(sender, using="default", **kwargs) -> None:
    """After every ``migrate`` (and test-database flush): cover the tables that lack
    the trigger, new ones included."""
    from django.apps import apps as registry

    install(connections[using], covered_tables(registry))
