"""Every setting the code reads (config/env.py's declaration) is given to every pod by
the ConfigMap or, for a secret, as a file of the Secret; nothing undeclared is set; and
the values given load through the declaration, production's refusals included."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import PurePosixPath

import pytest
import yaml

from config import env
from tests.deploy.manifests import (
    OVERLAYS,
    SECRET_NAME,
    SECRETS_EXAMPLE,
    container_environment,
    containers,
    kubectl,
    render,
    secret_mounts,
    secrets_example_keys,
    workloads,
)

READ_BY_THE_CODE = [setting for setting in env.VARIABLES if setting.read_by in env.PYTHON_READERS]
SECRET_SETTINGS = sorted(setting.name for setting in env.VARIABLES if setting.secret)


def _provided(docs, workload, container) -> tuple[dict[str, str], dict[str, str]]:
    """(the container's environment, secret key -> the NAME_FILE path naming it)."""
    environment = container_environment(docs, container)
    mounts = secret_mounts(workload, container)
    files = {}
    for name, value in environment.items():
        if name.endswith("_FILE"):
            path = PurePosixPath(value)
            assert mounts.get(str(path.parent)) == SECRET_NAME, (name, value, mounts)
            files[path.name] = value
    return environment, files


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_setting_the_code_reads_is_given_to_every_container(overlay):
    docs = render(overlay)
    for workload in workloads(docs):
        for container in containers(workload):
            where = (workload["metadata"]["name"], container["name"])
            environment, files = _provided(docs, workload, container)
            for setting in READ_BY_THE_CODE:
                if setting.secret:
                    # From its file in the Secret, never as a plain value in the ConfigMap.
                    assert setting.name not in environment, (where, setting.name)
                    assert environment[f"{setting.name}_FILE"] == files[setting.name], (where, setting.name)
                else:
                    assert setting.name in environment, (where, setting.name)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_config_map_sets_only_declared_variables(overlay):
    """So docs/settings.md describes every variable the manifests set."""
    declared = {setting.name for setting in env.VARIABLES} | {f"{name}_FILE" for name in SECRET_SETTINGS}
    docs = render(overlay)
    for workload in workloads(docs):
        for container in containers(workload):
            environment = container_environment(docs, container)
            assert set(environment) <= declared, set(environment) - declared
            for name in environment:
                assert f"`{name.removesuffix('_FILE')}`" in env.markdown(), name


def test_the_secrets_example_has_every_secret_key_the_pods_read():
    assert sorted(secrets_example_keys()) == SECRET_SETTINGS
    docs = render("production")
    for workload in workloads(docs):
        for container in containers(workload):
            _, files = _provided(docs, workload, container)
            assert sorted(files) == SECRET_SETTINGS


def test_the_documented_secret_command_takes_the_example_with_its_empty_values():
    result = subprocess.run(
        [
            kubectl(),
            "create",
            "secret",
            "generic",
            SECRET_NAME,
            f"--from-env-file={SECRETS_EXAMPLE}",
            "--dry-run=client",
            "--output=yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    secret = yaml.safe_load(result.stdout)
    assert sorted(secret.get("data", {})) == SECRET_SETTINGS
    assert set(secret["data"].values()) == {""}


def _load_as_the_pod(monkeypatch, tmp_path, environment: dict[str, str], secret_values: dict[str, str]):
    """The pod's environment, with its Secret's files under tmp_path: env.load()'s values."""
    for name in list(os.environ):
        if name in env.BY_NAME or name.removesuffix("_FILE") in env.BY_NAME or name.startswith(env.OWN_PREFIXES):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        if name.endswith("_FILE"):
            path = tmp_path / PurePosixPath(value).name
            path.write_text(secret_values.get(path.name, ""))
            value = str(path)
        monkeypatch.setenv(name, value)
    return env.load()


SECRET_VALUES = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "DATABASE_URL": "postgres://releasecal:a-password-of-its-own@postgres.example.org:5432/releasecal",
    "REDIS_URL": "redis://redis.example.org:6379/0",
    "CELERY_BROKER_URL": "redis://redis.example.org:6379/1",
    "METRICS_TOKEN": secrets.token_urlsafe(32),
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_values_given_load_under_production_settings(overlay, monkeypatch, tmp_path):
    docs = render(overlay)
    (web,) = [workload for workload in workloads(docs) if workload["metadata"]["name"] == "releasecal-web"]
    (container,) = [container for container in containers(web) if container["name"] == "web"]
    values = _load_as_the_pod(monkeypatch, tmp_path, container_environment(docs, container), SECRET_VALUES)
    assert values["DJANGO_SETTINGS_MODULE"] == env.PRODUCTION_SETTINGS
    env.check_production(values)
    assert values["SECRET_KEY"] == SECRET_VALUES["SECRET_KEY"]
    assert values["DATABASE_URL"] == SECRET_VALUES["DATABASE_URL"]
    # An empty file is an unset secret: Slack off, not a refusal.
    assert values["SLACK_BOT_TOKEN"] == ""
    # No proxy is trusted from everywhere, and the site answers its own name only.
    assert "*" not in values["FORWARDED_ALLOW_IPS"]
    assert values["ALLOWED_HOSTS"] == ["releasecal.example.org"]
    assert values["NUM_PROXIES"] == 1
    assert values["LOG_FORMAT"] == "json"
    assert values["RELEASECAL_VAR_DIR"] == PurePosixPath("/tmp/releasecal")  # noqa: S108 - the emptyDir


def test_a_pod_with_the_secret_left_empty_refuses_to_start_naming_the_key(monkeypatch, tmp_path):
    docs = render("small")
    (web,) = [workload for workload in workloads(docs) if workload["metadata"]["name"] == "releasecal-web"]
    (container,) = [container for container in containers(web) if container["name"] == "web"]
    values = _load_as_the_pod(monkeypatch, tmp_path, container_environment(docs, container), {})
    with pytest.raises(env.EnvironmentRefused) as refused:
        env.check_production(values)
    assert any(line.startswith("SECRET_KEY is not set") for line in refused.value.problems)
