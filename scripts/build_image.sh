#!/usr/bin/env bash
# Build mirrorspark's container image with buildah from deploy/Containerfile: the wheel first
# (scripts/build_wheel.py), then, unless BASE names a Debian 12 image, a base made from Debian's packages
# with debootstrap (kept as localhost/mirrorspark-base:bookworm), for machines without an image registry.
#
#   IMAGE=localhost/mirrorspark:dev BASE=docker.io/library/debian:bookworm-slim scripts/build_image.sh
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/mirrorspark:latest}
BASE=${BASE:-}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export BUILDAH_ISOLATION=chroot  # no user namespaces or cgroups needed (a sandbox, a CI container)

for tool in buildah python3; do
  command -v "$tool" >/dev/null || { echo "build_image: $tool is missing (apt-get install buildah)" >&2; exit 2; }
done
rm -rf dist && .venv/bin/python scripts/build_wheel.py dist
rm -f deploy/ca/*.crt
for ca in ${EXTRA_CA_CERTS:-}; do  # CAs the image trusts besides Debian's (deploy/ca/README.md)
  cp "$ca" "deploy/ca/$(basename "${ca%.*}").crt"
done

if [[ -z $BASE ]]; then
  BASE=localhost/mirrorspark-base:bookworm
  if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { echo "build_image: debootstrap is missing (apt-get install debootstrap), or set BASE" >&2; exit 2; }
    rootfs=build/image/rootfs
    rm -rf "$rootfs" && mkdir -p "$(dirname "$rootfs")"
    echo "build_image: debootstrap bookworm from $MIRROR ..."
    debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >build/image/debootstrap.log 2>&1 ||
      { echo "build_image: debootstrap failed, see build/image/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    ctr=$(buildah from scratch)
    buildah copy --quiet "$ctr" "$rootfs" / >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash "$ctr"
    buildah commit --quiet "$ctr" "$BASE" >/dev/null
    buildah rm "$ctr" >/dev/null
    rm -rf "$rootfs"
  fi
fi
echo "build_image: $IMAGE from $BASE ..."
buildah bud --quiet --isolation chroot --build-arg BASE="$BASE" -f deploy/Containerfile -t "$IMAGE" . >/dev/null
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$IMAGE"
