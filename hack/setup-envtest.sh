#!/usr/bin/env bash
# Makes kube-apiserver and etcd available for envtest and prints the directory
# to use as KUBEBUILDER_ASSETS. Progress goes to stderr; only the path goes to
# stdout, so callers can write KUBEBUILDER_ASSETS="$(hack/setup-envtest.sh)".
#
# Order of preference:
#   1. KUBEBUILDER_ASSETS, when it is already set and holds both binaries;
#   2. the cache outside the repository, filled by an earlier run;
#   3. the usual setup-envtest download (needs internet; fails fast without it);
#   4. a build from Go modules through the module proxy (minutes, cached).
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-v0.25.1}"
DOWNLOAD_TIMEOUT="${ENVTEST_DOWNLOAD_TIMEOUT:-90}"

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

try_download() {
  log "trying the setup-envtest download of ${K8S_VERSION}"
  local dir
  if dir="$(timeout "${DOWNLOAD_TIMEOUT}" go run "sigs.k8s.io/controller-runtime/tools/setup-envtest@${SETUP_ENVTEST_VERSION}" \
      use "${K8S_VERSION}" --bin-dir "${cache_root}/download" -p path 2>/dev/null)" && has_assets "${dir}"; then
    cp "${dir}/kube-apiserver" "${dir}/etcd" "${assets}/"
    return 0
  fi
  log "download unavailable; building from Go modules instead"
  return 1
}

# build_module NAME MAIN_GO GO_MOD_EXTRA LDFLAGS: builds a throwaway module in
# the cache (outside the repository) and installs its binary into the assets.
build_module() {
  local name="$1" main_go="$2" require="$3" ldflags="$4"
  local src="${cache_root}/src/${name}-$5"
  rm -rf "${src}"
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

if [[ "${ENVTEST_SKIP_DOWNLOAD:-}" == "true" ]] || ! try_download; then
  [[ -x "${assets}/etcd" ]] || build_etcd
  [[ -x "${assets}/kube-apiserver" ]] || build_kube_apiserver
fi

has_assets "${assets}" || { log "kube-apiserver or etcd missing in ${assets}"; exit 1; }
printf '%s\n' "${assets}"
