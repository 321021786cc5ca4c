#!/usr/bin/env bash
# Makes kube-apiserver and etcd available for envtest and prints the directory
# to use as KUBEBUILDER_ASSETS. Progress goes to stderr; only the path goes to
# stdout, so callers can write KUBEBUILDER_ASSETS="$(hack/setup-envtest.sh)".
#
# Order of preference:
#   1. KUBEBUILDER_ASSETS, when it is already set and holds both binaries;
#   2. the cache outside the repository, filled by an earlier run;
#   3. a build from Go modules through the module proxy (minutes, cached).
# Nothing is downloaded from anywhere but the Go module proxy.
#
# The build runs under a lock in the cache, so parallel callers (make run
# beside make test, several suites under make -j) build the control plane
# only once; a caller that has to wait says so.
#
# Environment:
#   KUBEBUILDER_ASSETS    a directory holding kube-apiserver and etcd: used as is
#   ENVTEST_K8S_VERSION   default 1.36.3 (built from k8s.io/kubernetes)
#   ENVTEST_ETCD_VERSION  default 3.6.16 (built from go.etcd.io/etcd/server/v3)
#   ENVTEST_CACHE_DIR     cache root (default ${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest)
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.6.16}"

os="$(go env GOOS)"
arch="$(go env GOARCH)"
cache_root="${ENVTEST_CACHE_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}"
assets="${cache_root}/k8s/${K8S_VERSION}-${os}-${arch}"

log() { printf 'setup-envtest: %s\n' "$*" >&2; }

has_assets() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && has_assets "${KUBEBUILDER_ASSETS}"; then
  printf '%s\n' "${KUBEBUILDER_ASSETS}"
  exit 0
fi

if has_assets "${assets}"; then
  printf '%s\n' "${assets}"
  exit 0
fi

mkdir -p "${assets}"

# with_lock NAME WHAT CMD...: runs CMD while holding the lock NAME in the
# cache. When another process holds it, says that this one waits for that
# build of WHAT, then waits.
with_lock() {
  local name="$1" what="$2"
  shift 2
  local lock="${cache_root}/.${name}.lock"
  if command -v flock >/dev/null 2>&1; then
    (
      if ! flock -n 9; then
        log "waiting for another build of ${what} to finish (lock ${lock})"
        flock 9
      fi
      "$@"
    ) 9>"${lock}"
  else
    "$@"
  fi
}

# build_module NAME MAIN_GO GO_MOD_EXTRA LDFLAGS VERSION: builds a throwaway
# module in the cache (outside the repository) and installs its binary into
# the assets. Runs under the lock, so leftovers of an interrupted build can
# be removed first.
build_module() {
  local name="$1" main_go="$2" require="$3" ldflags="$4"
  local src="${cache_root}/src/${name}-$5"
  rm -rf "${src}" "${assets}/${name}.tmp"
  mkdir -p "${src}"
  printf '%s\n' "${main_go}" >"${src}/main.go"
  printf 'module envtest.local/%s\n\ngo 1.26\n\n%s\n' "${name}" "${require}" >"${src}/go.mod"
  log "building ${name} from Go modules (this takes minutes the first time)"
  (
    cd "${src}"
    GOFLAGS=-mod=mod go mod tidy >&2
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "${ldflags}" -o "${assets}/${name}.tmp" . >&2
  )
  mv "${assets}/${name}.tmp" "${assets}/${name}"
}

# staging_replaces prints a replace directive, pinned to the published
# v0.x.y release, for every k8s.io module that k8s.io/kubernetes takes from
# its own ./staging tree (a dependent module cannot use those paths).
staging_replaces() {
  local gomod
  gomod="$(cd "${cache_root}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [[ -n "${gomod}" ]] || { log "could not download k8s.io/kubernetes@v${K8S_VERSION}"; return 1; }
  local staging_version="v0.${K8S_VERSION#1.}"
  grep -E '^[[:space:]]*k8s\.io/[^ ]+ => \./staging/' "${gomod}" |
    awk -v v="${staging_version}" '{ printf "replace %s => %s %s\n", $1, $1, v }'
}

build_kube_apiserver() {
  local replaces
  replaces="$(staging_replaces)"
  local main_go='package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}'
  local minor="${K8S_VERSION#1.}"
  minor="${minor%%.*}"
  build_module kube-apiserver "${main_go}" "require k8s.io/kubernetes v${K8S_VERSION}

${replaces}" \
    "-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
    "${K8S_VERSION}"
}

build_etcd() {
  local main_go='package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}'
  build_module etcd "${main_go}" "require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}" "-s -w" "${ETCD_VERSION}"
}

# build_control_plane: builds what the assets lack. Runs under the lock, and
# checks again there: the process that held it may have built both.
build_control_plane() {
  [[ -x "${assets}/etcd" ]] || build_etcd
  [[ -x "${assets}/kube-apiserver" ]] || build_kube_apiserver
}

with_lock "envtest-${K8S_VERSION}-${os}-${arch}" \
  "the control plane (kube-apiserver ${K8S_VERSION}, etcd ${ETCD_VERSION})" build_control_plane

has_assets "${assets}" || { log "kube-apiserver or etcd missing in ${assets}"; exit 1; }
printf '%s\n' "${assets}"
