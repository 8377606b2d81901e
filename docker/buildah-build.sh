#!/usr/bin/env bash
# Build the releasecal image without Docker: Debian's buildah, run as root.
#
#   docker/buildah-build.sh [-t TAG] [--debian-base]
#
# By default the base is the official slim Python image (PYTHON_IMAGE, pulled from your
# container registry). With --debian-base no container registry is needed: a Debian
# bookworm root file system is made with debootstrap from the Debian mirror apt uses on
# this machine and imported as the base (python3 + python3-venv from Debian). It is
# cached in buildah's local storage under a tag that is a hash of its inputs (this
# script's base recipe, the package list, the suite and the architecture), so it is
# made once per machine.
#
# pip inside the build uses the package index pip uses here: its index settings are
# read from pip's configuration (pip config list, PIP_* variables) and handed to the
# build as a secret file, mounted for the one `pip install` step only: it is in no layer
# and in no history entry (tests/test_image.py checks both).
#
# Prints "image: TAG", "base: IMAGE" and "build seconds: N" at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=releasecal:latest
DEBIAN_BASE=0
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --tag) TAG="$2"; shift 2 ;;
    --debian-base) DEBIAN_BASE=1; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

for tool in buildah python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install -y buildah)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "run as root: buildah's chroot isolation needs it here" >&2; exit 1; }

# --------------------------------------------------------------- the Debian base
SUITE=bookworm
ARCH=$(dpkg --print-architecture)
# python3 is 3.11 in bookworm, like the official image's; ca-certificates for pip's HTTPS.
PACKAGES=python3,python3-venv,ca-certificates

debian_mirror() {
  # The archive apt itself uses for the suite (sources.list or deb822 files); read from
  # apt's own list of what it would fetch, so it works before any `apt-get update`.
  apt-get update --print-uris 2>/dev/null | sed -n "s|^'\(.*\)/dists/$SUITE/InRelease'.*|\1/|p" | head -n 1
}

base_recipe() {
  # Everything that decides the base's contents; its hash names the cached image.
  printf '%s\n' "$SUITE" "$ARCH" "$PACKAGES"
  declare -f make_debian_base
}

make_debian_base() {
  local image="$1" mirror ctr mnt
  command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install -y debootstrap)" >&2; exit 1; }
  mirror=$(debian_mirror)
  [ -n "$mirror" ] || { echo "apt has no source for $SUITE (apt-get update?): cannot debootstrap" >&2; exit 1; }
  ctr=$(buildah from scratch)
  base_ctr=$ctr  # removed by cleanup, also on failure
  mnt=$(buildah mount "$ctr")
  debootstrap --variant=minbase --include="$PACKAGES" --arch="$ARCH" "$SUITE" "$mnt" "$mirror" >&2
  # No package lists, downloaded .debs or logs in the base.
  rm -rf "$mnt"/var/lib/apt/lists/* "$mnt"/var/cache/apt/archives/*.deb "$mnt"/var/log/* "$mnt"/tmp/*
  # Nor documentation (the copyright files stay), manual pages or translations.
  find "$mnt"/usr/share/doc -type f ! -name copyright -delete
  rm -rf "$mnt"/usr/share/man/* "$mnt"/usr/share/info/* "$mnt"/usr/share/locale/*
  buildah config --cmd /bin/bash --env LANG=C.UTF-8 \
    --label org.opencontainers.image.description="Debian $SUITE (debootstrap) with python3 and python3-venv" "$ctr"
  buildah commit --quiet --format docker "$ctr" "$image" >/dev/null
}

base_ctr=
secrets_dir=$(mktemp -d)
cleanup() {
  rm -rf "$secrets_dir"
  if [ -n "$base_ctr" ]; then
    buildah umount "$base_ctr" >/dev/null 2>&1 || true
    buildah rm "$base_ctr" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # so that cleanup runs when stopped

build_args=()
if [ "$DEBIAN_BASE" = 1 ]; then
  base="localhost/releasecal-debian-base:$(base_recipe | sha256sum | cut -c1-16)"
  if buildah inspect --type image "$base" >/dev/null 2>&1; then
    echo "Debian base: cached $base" >&2
  else
    echo "Debian base: building $base with debootstrap" >&2
    started=$SECONDS
    make_debian_base "$base"
    echo "Debian base: built in $((SECONDS - started))s" >&2
  fi
  build_args+=(--build-arg "PYTHON_IMAGE=$base")
else
  base=$(sed -n 's/^ARG PYTHON_IMAGE=//p' docker/Dockerfile)
fi

# ----------------------------------------------- pip's index settings, as a secret
python3 - "$secrets_dir" <<'PY'
"""Write pip.conf with this machine's index settings (remote ones only: local file://
indexes do not exist inside the build) and, when pip is given a CA bundle, a copy of it."""
import os, shutil, subprocess, sys

out = sys.argv[1]
listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
values = {}
for line in listed.splitlines():  # "global.index-url='https://...'", ":env:.cert='...'"
    key, _, value = line.partition("=")
    scope, _, name = key.rpartition(".")
    rank = {":env:": 3, "install": 2, "global": 1}.get(scope, 0)
    if rank and rank >= values.get(name, (0, ""))[0]:
        values[name] = (rank, value.strip().strip("'\""))
conf = {name: values[name][1] for name in ("index-url", "extra-index-url", "trusted-host", "cert") if name in values}
for name in ("index-url", "extra-index-url"):
    if name in conf:
        remote = [url for url in conf[name].split() if url.startswith(("http://", "https://"))]
        conf[name] = " ".join(remote)
        if not remote:
            del conf[name]
cert = conf.pop("cert", "")
lines = ["[global]"] + [f"{name} = {value}" for name, value in conf.items()]
if cert and os.path.isfile(cert):
    shutil.copyfile(cert, os.path.join(out, "pip-cert.pem"))
    lines.append("cert = /run/secrets/pip-cert")
extra = os.environ.get("RELEASECAL_PIP_CONF_EXTRA")  # tests/test_image.py: a canary line
if extra:
    lines.append(extra)
with open(os.path.join(out, "pip.conf"), "w") as f:
    f.write("\n".join(lines) + "\n")
PY
touch "$secrets_dir/pip-cert.pem"

# ------------------------------------------------------------------ the image
echo "Building $TAG on $base" >&2
started=$SECONDS
buildah build --isolation chroot --format docker --layers \
  --secret "id=pip-conf,src=$secrets_dir/pip.conf" \
  --secret "id=pip-cert,src=$secrets_dir/pip-cert.pem" \
  "${build_args[@]}" -f docker/Dockerfile -t "$TAG" . >&2
echo "image: $TAG"
echo "base: $base"
echo "build seconds: $((SECONDS - started))"
