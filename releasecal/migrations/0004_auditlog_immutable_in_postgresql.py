"""The audit log is immutable in the database too (PostgreSQL): a trigger refuses any
UPDATE or DELETE of a row. The one update allowed is the actor becoming NULL when that
user is deleted (the foreign key's ON DELETE SET NULL); the row keeps actor_label."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION releasecal_auditlog_immutable() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit log rows are immutable (% of row %)', TG_OP, OLD.id
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS releasecal_auditlog_immutable ON releasecal_auditlog;
CREATE TRIGGER releasecal_auditlog_immutable
    BEFORE UPDATE OR DELETE ON releasecal_auditlog
    FOR EACH ROW EXECUTE FUNCTION releasecal_auditlog_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS releasecal_auditlog_immutable ON releasecal_auditlog;
DROP FUNCTION IF EXISTS releasecal_auditlog_immutable();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("releasecal", "0003_release_slug_allows_versions")]
    operations = [migrations.RunPython(forwards, backwards)]
