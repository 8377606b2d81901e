"""The Kubernetes manifests as an operator applies them: each overlay of
deploy/kubernetes/ rendered with ``kubectl kustomize`` (kustomize v5, built into kubectl).

Without kubectl the tests skip locally and fail under CI=true."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import yaml

from tests.support.paths import ROOT
from tests.support.processes import unavailable

KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("small", "production")
# What the manifests are checked against (kubernetes-validate ships its schemas).
KUBERNETES_VERSION = "1.37"
SECRET_NAME = "releasecal-secrets"
SECRETS_EXAMPLE = KUBERNETES / "secrets.env.example"
WORKLOAD_KINDS = ("Deployment", "Job")


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        unavailable("kubectl is missing: it renders deploy/kubernetes/ (kubectl kustomize)")
    return found


@functools.cache
def _render(path: Path) -> tuple[dict, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(path: str | Path) -> list[dict]:
    """The manifests of a kustomization (an overlay's name, or a folder), fresh copies."""
    folder = KUBERNETES / "overlays" / path if isinstance(path, str) else path
    return yaml.safe_load(yaml.safe_dump(list(_render(folder))))


def named(docs: list[dict], kind: str, name: str) -> dict:
    (found,) = [doc for doc in docs if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return found


def workloads(docs: list[dict]) -> list[dict]:
    return [doc for doc in docs if doc["kind"] in WORKLOAD_KINDS]


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def containers(workload: dict, *, init: bool = True) -> Iterator[dict]:
    spec = pod_spec(workload)
    yield from spec.get("initContainers", []) if init else ()
    yield from spec["containers"]


def config_map(docs: list[dict], generated_name: str) -> dict:
    (found,) = [doc for doc in docs if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == generated_name]
    return found


def container_environment(docs: list[dict], container: dict) -> dict[str, str]:
    """Every variable the container is given: its ConfigMaps' keys (envFrom) and its env
    entries (a configMapKeyRef read from the rendered ConfigMap)."""
    environment: dict[str, str] = {}
    for source in container.get("envFrom", []):
        assert set(source) == {"configMapRef"}, source  # secrets come as files, never as env
        environment.update(config_map(docs, source["configMapRef"]["name"]).get("data", {}))
    for entry in container.get("env", []):
        if "value" in entry:
            environment[entry["name"]] = entry["value"]
        else:
            ref = entry["valueFrom"]["configMapKeyRef"]
            environment[entry["name"]] = config_map(docs, ref["name"])["data"][ref["key"]]
    return environment


def secret_mounts(workload: dict, container: dict) -> dict[str, str]:
    """Mount path -> Secret name, for the container's volumes that are Secrets."""
    volumes = {volume["name"]: volume for volume in pod_spec(workload).get("volumes", [])}
    mounts = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "secret" in volume:
            assert "items" not in volume["secret"], "every key of the Secret is mounted"
            mounts[mount["mountPath"]] = volume["secret"]["secretName"]
    return mounts


def secrets_example_keys() -> list[str]:
    keys = []
    for line in SECRETS_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            keys.append(line.partition("=")[0])
    return keys
