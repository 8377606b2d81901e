"""docs/settings.md and docker/.env.example are generated from the declaration of every
environment variable (config/env.py, ``manage.py settings_doc``) and stay so."""

from __future__ import annotations

import re
import sys

from config import env
from tests.support.paths import ROOT
from tests.support.processes import load_compose, production_env, run


def test_docs_settings_md_is_the_generated_page():
    assert (ROOT / "docs" / "settings.md").read_text() == env.markdown(), "run: manage.py settings_doc"


def test_docker_env_example_is_the_generated_file():
    assert (ROOT / "docker" / ".env.example").read_text() == env.env_example(), "run: manage.py settings_doc"


def test_the_settings_doc_command_finds_the_committed_pages_current():
    result = run([sys.executable, "manage.py", "settings_doc", "--check"], production_env())
    assert result.returncode == 0, result.stderr


def test_the_page_lists_every_variable_with_its_type_default_and_file_form():
    page = env.markdown()
    for setting in env.VARIABLES:
        (row,) = [line for line in page.splitlines() if line.startswith(f"| `{setting.name}` |")]
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 5, row
        assert cells[1]
        assert cells[2]
        old_names = ", ".join(f"`{old}`" for old in setting.deprecated)
        plural = "s" if len(setting.deprecated) > 1 else ""
        assert cells[3] == (f"{setting.help} Old name{plural}: {old_names}." if old_names else setting.help)
        assert cells[4] == ("yes" if setting.secret else "")


def example_values() -> dict[str, str]:
    values = {}
    for line in (ROOT / "docker" / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


def test_the_env_example_lists_what_a_deployment_sets():
    text = (ROOT / "docker" / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))
    must = {
        "SECRET_KEY", "POSTGRES_PASSWORD", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SITE_URL", "SITE_HOST",
        "EMAIL_URL", "DEFAULT_FROM_EMAIL", "SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "SLACK_RELEASE_TEAM_CHANNEL",
        "REMINDERS_RELEASE_TEAM_EMAIL", "FORWARDED_ALLOW_IPS", "NUM_PROXIES", "WEB_BIND", "INTAKE_IMAP_HOST",
        "WEB_CONCURRENCY", "WORKER_CONCURRENCY",
    }  # fmt: skip
    assert must <= listed
    assert listed <= set(env.BY_NAME)
    # compose sets these itself (its environment: wins over the env file): not listed, not to mislead.
    assert {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}.isdisjoint(listed)


def test_the_env_example_trusts_no_proxy_and_its_secrets_are_refused_in_production():
    values = example_values()
    assert "FORWARDED_ALLOW_IPS" not in values  # shown commented out, empty: no proxy trusted
    assert "*" not in (ROOT / "docker" / ".env.example").read_text().split("FORWARDED_ALLOW_IPS=")[1].splitlines()[0]
    compose_env = load_compose()["x-app"]["environment"]
    database_url = compose_env["DATABASE_URL"].replace(
        "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}", values["POSTGRES_PASSWORD"]
    )
    environ = production_env(**values, DATABASE_URL=database_url)
    result = run([sys.executable, "manage.py", "check", "--deploy"], environ)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "SECRET_KEY is the example key. Set SECRET_KEY to a random value of at least 50 characters.",
        "DATABASE_URL has the example password 'change-me' (POSTGRES_PASSWORD in docker/.env.example): "
        "choose a password of your own.",
    ]


def test_the_env_example_passes_with_a_key_and_password_of_ones_own():
    values = example_values()
    values["SECRET_KEY"] = "an-operator's-own-key-" + "x" * 40
    environ = production_env(**values, DATABASE_URL="postgres://releasecal:own-password@127.0.0.1:1/releasecal")
    code = (
        "import django; django.setup(); from django.conf import settings as s; print(s.REST_FRAMEWORK['NUM_PROXIES'])"
    )
    result = run([sys.executable, "-c", code], environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
