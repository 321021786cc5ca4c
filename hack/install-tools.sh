#!/usr/bin/env bash
# Builds the command-line tools the tests drive (terraform, kubectl) from Go
# modules, through the module proxy, into a cache outside the repository, and
# prints the absolute path of the requested binary. Progress goes to stderr;
# only the path goes to stdout, so callers can write
#   TERRAFORM="$(hack/install-tools.sh terraform)"
#   KUBECTL="$(hack/install-tools.sh kubectl)"
#
# A binary already in the cache is reused. Builds go to a temporary name and are
# renamed into place, so an interrupted build never leaves a half-written binary.
#
# Environment:
#   INFRASTATE_TOOLS_DIR  cache root (default ${XDG_DATA_HOME:-$HOME/.local/share}/infrastate-tools)
#   TERRAFORM_VERSION     default 1.5.7
#   KUBECTL_VERSION       default 1.36.3 (built from k8s.io/kubectl v0.36.3)
set -euo pipefail

TERRAFORM_VERSION="${TERRAFORM_VERSION:-1.5.7}"
KUBECTL_VERSION="${KUBECTL_VERSION:-1.36.3}"
cache_root="${INFRASTATE_TOOLS_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/infrastate-tools}"

log() { printf 'install-tools: %s\n' "$*" >&2; }

usage() {
  printf 'usage: %s terraform|kubectl\n' "$0" >&2
  exit 2
}

# with_lock NAME CMD...: runs CMD while holding a per-tool lock in the cache,
# so parallel callers (make -j, several test suites) build a tool only once.
with_lock() {
  local name="$1"
  shift
  if command -v flock >/dev/null 2>&1; then
    (
      flock 9
      "$@"
    ) 9>"${cache_root}/.${name}.lock"
  else
    "$@"
  fi
}

# install_terraform DEST: go install github.com/hashicorp/terraform into a
# temporary GOBIN next to DEST, then renames the binary into place. Runs under
# the tool's lock, so leftovers of an interrupted build can be removed first.
install_terraform() {
  local dest="$1"
  [[ -x "${dest}" ]] && return 0
  local dir tmp
  dir="$(dirname "${dest}")"
  rm -rf "${dir}".partial.*
  mkdir -p "${dir}"
  tmp="$(mktemp -d "${dir}.partial.XXXXXX")"
  trap "rm -rf $(printf '%q' "${tmp}")" EXIT
  log "building terraform v${TERRAFORM_VERSION} from Go modules (about 2 minutes the first time)"
  if ! (cd "${tmp}" && GOFLAGS= CGO_ENABLED=0 GOBIN="${tmp}" \
      go install -trimpath "github.com/hashicorp/terraform@v${TERRAFORM_VERSION}" >&2); then
    rm -rf "${tmp}"
    log "terraform build failed"
    return 1
  fi
  mv "${tmp}/terraform" "${dest}"
  rm -rf "${tmp}"
}

# install_kubectl DEST: builds kubectl from a small generated module (in the
# cache, never in the repository) that requires k8s.io/kubectl. Runs under the
# tool's lock, so leftovers of an interrupted build can be removed first.
install_kubectl() {
  local dest="$1"
  [[ -x "${dest}" ]] && return 0
  local dir src minor
  dir="$(dirname "${dest}")"
  rm -rf "${cache_root}/src/kubectl-${KUBECTL_VERSION}".* "${dest}".tmp.*
  mkdir -p "${dir}" "${cache_root}/src"
  src="$(mktemp -d "${cache_root}/src/kubectl-${KUBECTL_VERSION}.XXXXXX")"
  trap "rm -rf $(printf '%q %q' "${src}" "${dest}.tmp.$$")" EXIT
  minor="${KUBECTL_VERSION#1.}"
  minor="${minor%%.*}"
  cat >"${src}/main.go" <<'GO'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
GO
  printf 'module tools.local/kubectl\n\ngo 1.26\n\nrequire k8s.io/kubectl v0.%s\n' "${KUBECTL_VERSION#1.}" >"${src}/go.mod"
  log "building kubectl v${KUBECTL_VERSION} from Go modules (minutes the first time)"
  if ! (
    cd "${src}"
    GOFLAGS=-mod=mod go mod tidy >&2
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
      -ldflags "-X k8s.io/component-base/version.gitVersion=v${KUBECTL_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
      -o "${dest}.tmp.$$" . >&2
  ); then
    rm -rf "${src}" "${dest}.tmp.$$"
    log "kubectl build failed"
    return 1
  fi
  mv "${dest}.tmp.$$" "${dest}"
  rm -rf "${src}"
}

[[ $# -eq 1 ]] || usage
mkdir -p "${cache_root}"
cache_root="$(cd "${cache_root}" && pwd -P)"

case "$1" in
  terraform)
    bin="${cache_root}/terraform-${TERRAFORM_VERSION}/terraform"
    [[ -x "${bin}" ]] || with_lock "terraform-${TERRAFORM_VERSION}" install_terraform "${bin}"
    ;;
  kubectl)
    bin="${cache_root}/kubectl-${KUBECTL_VERSION}/kubectl"
    [[ -x "${bin}" ]] || with_lock "kubectl-${KUBECTL_VERSION}" install_kubectl "${bin}"
    ;;
  *)
    usage
    ;;
esac

[[ -x "${bin}" ]] || { log "$1 missing at ${bin}"; exit 1; }
printf '%s\n' "${bin}"
