"""The one declaration of the environment (config/env.py): strict reading, secrets from
files, renamed variables, the generated pages, and that nothing else reads os.environ."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import pytest

from config import env
from tests.support.paths import ROOT
from tests.support.processes import production_env, run

NOT_A_BOOLEAN = "is not a boolean (1, 0, true, false, yes, no, on or off)"
WEAK_KEY = "Set SECRET_KEY to a random value of at least 50 characters"


def refusal(monkeypatch, **values: str) -> list[str]:
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(env.EnvironmentRefused) as refused:
        env.load()
    return refused.value.problems


# --------------------------------------------------------------------------- strictness


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        ("DEBUG", "ture", "DEBUG='ture' " + NOT_A_BOOLEAN),
        ("SECURE_SSL_REDIRECT", "maybe", "SECURE_SSL_REDIRECT='maybe' " + NOT_A_BOOLEAN),
        ("NUM_PROXIES", "one", "NUM_PROXIES='one' is not an integer"),
        ("WEB_CONCURRENCY", "2.5", "WEB_CONCURRENCY='2.5' is not an integer"),
        ("CACHE_SOCKET_TIMEOUT", "fast", "CACHE_SOCKET_TIMEOUT='fast' is not a number"),
        ("OUTBOX_SWEEP_SECONDS", "121", "OUTBOX_SWEEP_SECONDS must be 1 to 120, not 121"),
        ("NUM_PROXIES", "-1", "NUM_PROXIES must be 0 to 5, not -1"),
        ("INTAKE_IMAP_PORT", "70000", "INTAKE_IMAP_PORT must be 0 to 65535, not 70000"),
        ("LOG_FORMAT", "xml", "LOG_FORMAT must be one of plain, json, not xml"),
        ("INTAKE_IMAP_TLS", "tls", "INTAKE_IMAP_TLS must be one of ssl, starttls, none, not tls"),
        (
            "DJANGO_SETTINGS_MODULE",
            "config.settings.prod",
            "DJANGO_SETTINGS_MODULE must be one of config.settings.base, config.settings.production, "
            "tests.settings, not config.settings.prod",
        ),
        ("SITE_URL", "releasecal.example.org", "SITE_URL='releasecal.example.org' is not an http(s) URL"),
        (
            "SITE_HOST",
            "https://releasecal.example.org",
            "SITE_HOST='https://releasecal.example.org' is not a host name (no scheme, port or path)",
        ),
        (
            "API_THROTTLE_ANON",
            "lots",
            "API_THROTTLE_ANON='lots' is not a rate such as 600/min (per s, min, hour or day)",
        ),
        (
            "FORWARDED_ALLOW_IPS",
            "*,proxy",
            "FORWARDED_ALLOW_IPS='*,proxy' has 'proxy', which is not an IP address or network",
        ),
        (
            "REMINDERS_RELEASE_TEAM_EMAIL",
            "release team",
            "REMINDERS_RELEASE_TEAM_EMAIL='release team' is not an email address",
        ),
        (
            "REMINDERS_DIGEST",
            "0",
            "REMINDERS_DIGEST is not a variable releasecal reads (did you mean REMINDERS_DIGESTS?): "
            "see docs/settings.md",
        ),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_the_variable(monkeypatch, name, value, line):
    assert refusal(monkeypatch, **{name: value}) == [line]


def test_a_secret_is_never_shown_in_its_refusal(monkeypatch):
    secret = "hunter2-not-a-url"
    (line,) = refusal(monkeypatch, DATABASE_URL=secret)
    assert line == "DATABASE_URL is not a database URL (postgres://user:password@host:5432/name or sqlite:///path)"
    monkeypatch.delenv("DATABASE_URL")
    (line,) = refusal(monkeypatch, EMAIL_URL=f"gopher://me:{secret}@example.org")
    assert secret not in line
    assert line.startswith("EMAIL_URL is not an email URL")


def test_every_bad_variable_is_named_at_once(monkeypatch):
    assert refusal(monkeypatch, DEBUG="ture", LOG_LEVEL="debug", GUNICORN_TIMEOUT="0") == [
        "DEBUG='ture' " + NOT_A_BOOLEAN,
        "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not debug",
        "GUNICORN_TIMEOUT must be 1 to 3600, not 0",
    ]


@pytest.mark.parametrize(
    ("value", "read"),
    [
        *[(word, True) for word in ("1", "true", "yes", "on", "TRUE")],
        *[(word, False) for word in ("0", "false", "no", "off")],
    ],
)
def test_booleans_read_every_usual_spelling(monkeypatch, value, read):
    # REMINDERS_DIGESTS == "1" used to turn digests off for REMINDERS_DIGESTS=true.
    monkeypatch.setenv("REMINDERS_DIGESTS", value)
    assert env.load()["REMINDERS_DIGESTS"] is read


def test_an_empty_value_is_the_default(monkeypatch):
    monkeypatch.setenv("NUM_PROXIES", "")
    monkeypatch.setenv("ALLOWED_HOSTS", "")
    values = env.load()
    assert values["NUM_PROXIES"] == 0
    assert values["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "testserver"]


def test_lists_are_split_and_stripped(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", " a.example.org, b.example.org ,,")
    assert env.load()["ALLOWED_HOSTS"] == ["a.example.org", "b.example.org"]


def test_the_defaults_pass_their_own_checks():
    for setting in env.VARIABLES:
        if setting.default in (None, "", []):
            continue
        for check in env.validators(setting):
            check(setting.default)


@pytest.mark.parametrize(
    ("command", "line"),
    [
        ([sys.executable, "manage.py", "check"], "DEBUG='ture' " + NOT_A_BOOLEAN),
        ([sys.executable, "-m", "celery", "-A", "config", "worker"], "DEBUG='ture' " + NOT_A_BOOLEAN),
        (
            [sys.executable, "-m", "gunicorn", "--config", "docker/gunicorn.conf.py", "config.wsgi:application"],
            "DEBUG='ture' " + NOT_A_BOOLEAN,
        ),
    ],
    ids=["manage.py", "celery", "gunicorn"],
)
def test_a_bad_value_stops_every_process_with_its_line_and_no_traceback(command, line):
    environ = production_env(DEBUG="ture", GUNICORN_BIND="127.0.0.1:0")
    result = run(command, environ, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == line, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "Booting worker" not in result.stderr + result.stdout


def test_the_health_check_names_a_bad_bind():
    result = run([sys.executable, "docker/healthcheck.py"], production_env(GUNICORN_BIND="127.0.0.1"), timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip() == "GUNICORN_BIND='127.0.0.1' has '127.0.0.1', which is not HOST:PORT or unix:PATH"


# --------------------------------------------------------------------------- secrets from files


def test_a_secret_is_read_from_its_file_without_the_trailing_newline(monkeypatch, tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("k" * 60 + "\n")
    monkeypatch.setenv("SECRET_KEY_FILE", str(key))
    token = tmp_path / "slack"
    token.write_text("xoxb-from-a-file")
    monkeypatch.setenv("SLACK_BOT_TOKEN_FILE", str(token))
    values = env.load()
    assert values["SECRET_KEY"] == "k" * 60
    assert values["SLACK_BOT_TOKEN"] == "xoxb-from-a-file"


def test_a_secret_file_is_checked_like_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    url = tmp_path / "database_url"
    url.write_text("mysql-ish://nope")
    assert refusal(monkeypatch, DATABASE_URL_FILE=str(url)) == [
        "DATABASE_URL (from DATABASE_URL_FILE) is not a database URL "
        "(postgres://user:password@host:5432/name or sqlite:///path)"
    ]


def test_a_missing_secret_file_is_named(monkeypatch, tmp_path):
    missing = tmp_path / "nothing-here"
    assert refusal(monkeypatch, EMAIL_URL_FILE=str(missing)) == [
        f"EMAIL_URL_FILE={str(missing)!r} is not a readable file"
    ]


def test_an_empty_secret_file_is_an_unset_variable(monkeypatch, tmp_path):
    """A Kubernetes Secret holds every key; those not used (no Slack, no mailbox, email
    on the console) are empty files, and read as their defaults."""
    for name in ("EMAIL_URL", "SLACK_BOT_TOKEN", "CELERY_BROKER_URL", "METRICS_TOKEN"):
        empty = tmp_path / name
        empty.write_text("\n" if name == "EMAIL_URL" else "")
        monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(f"{name}_FILE", str(empty))
    values = env.load()
    assert values["EMAIL_URL"] == "console://"
    assert values["SLACK_BOT_TOKEN"] == ""
    assert values["CELERY_BROKER_URL"] == ""
    assert values["METRICS_TOKEN"] == ""


def test_production_refuses_an_empty_key_file_as_a_missing_key(tmp_path):
    key = tmp_path / "SECRET_KEY"
    key.write_text("")
    environ = production_env(SECRET_KEY_FILE=str(key))
    environ.pop("SECRET_KEY")
    result = run([sys.executable, "manage.py", "check"], environ)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "SECRET_KEY is not set. Set SECRET_KEY to a random value of at least 50 characters "
        "(or SECRET_KEY_FILE to a file holding it)."
    )


def test_a_secret_and_its_file_together_are_refused(monkeypatch, tmp_path):
    key = tmp_path / "key"
    key.write_text("k" * 60)
    assert refusal(monkeypatch, SECRET_KEY="x" * 60, SECRET_KEY_FILE=str(key)) == [
        "SECRET_KEY and SECRET_KEY_FILE are both set: set one of them"
    ]


def test_only_secrets_have_a_file_form(monkeypatch, tmp_path):
    debug = tmp_path / "debug"
    debug.write_text("1")
    monkeypatch.setenv("DEBUG_FILE", str(debug))
    assert env.load()["DEBUG"] is False
    secrets = {setting.name for setting in env.VARIABLES if setting.secret}
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "EMAIL_URL"} <= secrets
    assert {"SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "INTAKE_IMAP_PASSWORD"} <= secrets


def test_the_production_settings_read_the_key_from_a_file(tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("f" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz\n")
    environ = production_env(SECRET_KEY_FILE=str(key))
    environ.pop("SECRET_KEY")
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    result = run([sys.executable, "-c", code], environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "f" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz"


# --------------------------------------------------------------------------- renamed variables

RENAMED = env.Setting("NEW_SWEEP", "int", 5, "A renamed variable.", min=1, max=10, deprecated=("OLD_SWEEP",))


def test_an_old_name_still_reads_with_a_warning_naming_the_new_one(monkeypatch):
    monkeypatch.setenv("OLD_SWEEP", "7")
    with pytest.warns(env.DeprecatedSettingWarning, match=r"^OLD_SWEEP is deprecated: set NEW_SWEEP instead$"):
        assert env.load([RENAMED]) == {"NEW_SWEEP": 7}


def test_the_new_name_wins_and_the_old_one_is_called_ignored(monkeypatch):
    monkeypatch.setenv("NEW_SWEEP", "3")
    monkeypatch.setenv("OLD_SWEEP", "7")
    with pytest.warns(
        env.DeprecatedSettingWarning, match=r"^OLD_SWEEP is deprecated and ignored \(NEW_SWEEP is read\)"
    ):
        assert env.load([RENAMED]) == {"NEW_SWEEP": 3}


def test_a_bad_value_under_the_old_name_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("OLD_SWEEP", "70")
    with pytest.warns(env.DeprecatedSettingWarning), pytest.raises(env.EnvironmentRefused) as refused:
        env.load([RENAMED])
    assert refused.value.problems == ["OLD_SWEEP must be 1 to 10, not 70"]


def test_the_new_name_alone_reads_without_a_warning(monkeypatch):
    monkeypatch.setenv("NEW_SWEEP", "3")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.load([RENAMED]) == {"NEW_SWEEP": 3}


def test_a_renamed_secret_keeps_its_file_form_under_the_old_name(monkeypatch, tmp_path):
    renamed = env.Setting("NEW_TOKEN", "str", "", "A renamed secret.", secret=True, deprecated=("OLD_TOKEN",))
    token = tmp_path / "token"
    token.write_text("s3cret")
    monkeypatch.setenv("OLD_TOKEN_FILE", str(token))
    with pytest.warns(env.DeprecatedSettingWarning, match="OLD_TOKEN is deprecated: set NEW_TOKEN instead"):
        assert env.load([renamed]) == {"NEW_TOKEN": "s3cret"}


def test_every_old_name_is_listed_on_the_settings_page():
    for setting in env.VARIABLES:
        for old in setting.deprecated:
            assert f"`{old}`" in env.markdown(), old


# --------------------------------------------------------------------------- one declaration


def _source_files():
    for pattern in ("**/*.py", "**/*.sh"):
        for path in ROOT.glob(pattern):
            parts = path.relative_to(ROOT).parts
            if parts[0] in {".venv", "node_modules", "tests", "bench", "var", "staticfiles"}:
                continue
            yield path


def test_nothing_but_the_declaration_reads_the_environment():
    # Written, not read: the settings module for Django, and gunicorn's config handing
    # prometheus-client its multiprocess directory (which that library reads).
    readers = re.compile(r"os\.environ(?!\[\"(DJANGO_SETTINGS_MODULE|PROMETHEUS_MULTIPROC_DIR)\"\] = )|getenv\(")
    found = {
        str(path.relative_to(ROOT))
        for path in _source_files()
        if readers.search(path.read_text()) and path != ROOT / "config" / "env.py"
    }
    # The image build script's pip-configuration step is not the app's configuration, and
    # make run's launcher hands its environment on to the server and worker it starts (with
    # the demo mailbox's variables added), which read it through the declaration.
    assert found == {"docker/buildah-build.sh", "config/run.py"}
    assert re.findall(r"os\.environ.*", (ROOT / "config" / "run.py").read_text()) == [
        "os.environ, **start_mailbox(args.python, mailbox)}"
    ]


def test_every_variable_the_code_names_is_declared():
    declared = set(env.BY_NAME)
    named = set()
    for path in _source_files():
        text = path.read_text()
        named |= set(re.findall(r'environment\["([A-Z0-9_]+)"\]', text))
        named |= set(re.findall(r'env\.read\("([A-Z0-9_]+)"\)', text))
    named |= set(re.findall(r"\$\{([A-Z0-9_]+)", (ROOT / "docker" / "compose.yml").read_text()))
    assert named - declared == set()
    # ...and every declared variable is read somewhere (ensure_admin names its one in a constant).
    python_read = {setting.name for setting in env.VARIABLES if setting.read_by != "compose"}
    assert python_read - named == {"RELEASECAL_ADMIN_PASSWORD"}
    assert (
        'PASSWORD_ENV = "RELEASECAL_ADMIN_PASSWORD"'
        in (ROOT / "demo" / "management" / "commands" / "ensure_admin.py").read_text()
    )
    compose_read = {setting.name for setting in env.VARIABLES if setting.read_by == "compose"}
    assert compose_read <= named


# --------------------------------------------------------------------------- safe defaults


def test_no_proxy_is_trusted_by_default():
    environ = production_env()
    environ.pop("FORWARDED_ALLOW_IPS", None)
    environ.pop("NUM_PROXIES", None)
    code = (
        "import runpy; conf = runpy.run_path('docker/gunicorn.conf.py'); print(repr(conf['forwarded_allow_ips']))\n"
        "import django; django.setup(); from django.conf import settings; print(settings.REST_FRAMEWORK['NUM_PROXIES'])"
    )
    result = run([sys.executable, "-c", code], environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["''", "0"]


def test_gunicorn_is_given_the_declared_values():
    environ = production_env(WEB_CONCURRENCY="5", GUNICORN_THREADS="4", FORWARDED_ALLOW_IPS="10.0.0.5,10.1.0.0/16")
    code = (
        "import runpy; c = runpy.run_path('docker/gunicorn.conf.py'); "
        "print(c['workers'], c['threads'], c['timeout'], c['forwarded_allow_ips'], c['bind'])"
    )
    result = run([sys.executable, "-c", code], environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5", "4", "30", "10.0.0.5,10.1.0.0/16", "0.0.0.0:8000"]


@pytest.mark.parametrize(
    ("key", "line"),
    [
        (
            None,
            "SECRET_KEY is not set. Set SECRET_KEY to a random value of at least 50 characters "
            "(or SECRET_KEY_FILE to a file holding it).",
        ),
        (
            "",
            "SECRET_KEY is not set. Set SECRET_KEY to a random value of at least 50 characters "
            "(or SECRET_KEY_FILE to a file holding it).",
        ),
        ("short", "SECRET_KEY has 5 characters. " + WEAK_KEY + "."),
        (env.DEV_SECRET_KEY, "SECRET_KEY is the development key. " + WEAK_KEY + "."),
        (env.EXAMPLE_SECRET_KEY, "SECRET_KEY is the example key. " + WEAK_KEY + "."),
    ],
    ids=["missing", "empty", "short", "development", "example"],
)
def test_production_refuses_a_weak_key_in_one_line(key, line):
    environ = production_env()
    if key is None:
        environ.pop("SECRET_KEY")
    else:
        environ["SECRET_KEY"] = key
    result = run([sys.executable, "manage.py", "check"], environ)
    assert result.returncode == 1
    assert result.stderr.strip() == line
    assert "Traceback" not in result.stderr


def test_production_refuses_the_example_database_password():
    environ = production_env(DATABASE_URL="postgres://releasecal:change-me@postgres:5432/releasecal")
    result = run([sys.executable, "manage.py", "check"], environ)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "DATABASE_URL has the example password 'change-me' (POSTGRES_PASSWORD in docker/.env.example): "
        "choose a password of your own."
    )


def test_gunicorn_refuses_a_weak_key_before_any_worker_boots():
    environ = production_env(SECRET_KEY="short", GUNICORN_BIND="127.0.0.1:0")
    proc = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--config", "docker/gunicorn.conf.py", "config.wsgi:application"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == "SECRET_KEY has 5 characters. " + WEAK_KEY + "."


def test_the_development_settings_keep_their_embedded_key():
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    environ = {k: v for k, v in production_env().items() if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    result = run([sys.executable, "-c", f"from config import env; env.use_settings_module(); {code}"], environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == env.DEV_SECRET_KEY


def test_the_outbox_s_old_reminders_names_still_read_with_a_warning(monkeypatch):
    monkeypatch.setenv("REMINDERS_MAX_ATTEMPTS", "4")
    with pytest.warns(
        env.DeprecatedSettingWarning, match=r"^REMINDERS_MAX_ATTEMPTS is deprecated: set OUTBOX_MAX_ATTEMPTS instead$"
    ):
        assert env.read("OUTBOX_MAX_ATTEMPTS") == 4


def test_every_outbox_setting_keeps_its_reminders_name():
    outbox = [setting for setting in env.VARIABLES if setting.name.startswith("OUTBOX_")]
    assert len(outbox) == 12
    for setting in outbox:
        assert setting.deprecated == ("REMINDERS_" + setting.name.removeprefix("OUTBOX_"),)
