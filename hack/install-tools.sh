#!/usr/bin/env bash
# Builds the command-line tools the tests and the linter drive (terraform,
# tofu, kubectl, golangci-lint) from Go modules, through the module proxy, into a
# cache outside the repository, and prints the absolute path of the requested
# binary. Progress goes to stderr; only the path goes to stdout, so callers can
# write
#   TERRAFORM="$(hack/install-tools.sh terraform)"
#   TOFU="$(hack/install-tools.sh tofu)"
#   KUBECTL="$(hack/install-tools.sh kubectl)"
#   GOLANGCI_LINT="$(hack/install-tools.sh golangci-lint)"
#   HELM="$(hack/install-tools.sh helm)"
#
# A binary already in the cache is reused. Builds go to a temporary name and are
# renamed into place, so an interrupted build never leaves a half-written binary.
#
# Environment:
#   INFRASTATE_TOOLS_DIR  cache root (default ${XDG_DATA_HOME:-$HOME/.local/share}/infrastate-tools)
#   TERRAFORM_VERSION     default 1.5.7
#   TOFU_VERSION          default 1.12.6 (github.com/opentofu/opentofu)
#   KUBECTL_VERSION       default 1.36.3 (built from k8s.io/kubectl v0.36.3)
#   GOLANGCI_LINT_VERSION default 2.15.0 (github.com/golangci/golangci-lint/v2);
#                         built with the Go on PATH and GOTOOLCHAIN=local, so a
#                         version that needs a newer Go fails instead of
#                         fetching another toolchain
#   HELM_VERSION          default 3.22.0 (helm.sh/helm/v3)
set -euo pipefail

TERRAFORM_VERSION="${TERRAFORM_VERSION:-1.5.7}"
TOFU_VERSION="${TOFU_VERSION:-1.12.6}"
KUBECTL_VERSION="${KUBECTL_VERSION:-1.36.3}"
GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-2.15.0}"
HELM_VERSION="${HELM_VERSION:-3.22.0}"
cache_root="${INFRASTATE_TOOLS_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/infrastate-tools}"

log() { printf 'install-tools: %s\n' "$*" >&2; }

usage() {
  printf 'usage: %s terraform|tofu|kubectl|golangci-lint|helm\n' "$0" >&2
  exit 2
}

# with_lock NAME CMD...: runs CMD while holding a per-tool lock in the cache,
# so parallel callers (make -j, several test suites) build a tool only once.
# When another process holds the lock, says that this one waits for that
# build, then waits.
with_lock() {
  local name="$1"
  shift
  local lock="${cache_root}/.${name}.lock"
  if command -v flock >/dev/null 2>&1; then
    (
      if ! flock -n 9; then
        log "waiting for another build of ${name} to finish (lock ${lock})"
        flock 9
      fi
      "$@"
    ) 9>"${lock}"
  else
    "$@"
  fi
}

# go_install DEST PACKAGE@VERSION DURATION [LDFLAGS]: go install PACKAGE into
# a temporary GOBIN next to DEST, then renames the binary into place. Runs
# under the tool's lock, so leftovers of an interrupted build can be removed
# first. DURATION is how long a first build takes, for the progress message;
# LDFLAGS, if given, are passed to the linker.
go_install() {
  local dest="$1" pkg="$2" duration="$3" ldflags="${4:-}"
  [[ -x "${dest}" ]] && return 0
  local dir tmp
  dir="$(dirname "${dest}")"
  rm -rf "${dir}".partial.*
  mkdir -p "${dir}"
  tmp="$(mktemp -d "${dir}.partial.XXXXXX")"
  trap "rm -rf $(printf '%q' "${tmp}")" EXIT
  log "building ${pkg} from Go modules (${duration} the first time)"
  if ! (cd "${tmp}" && GOFLAGS= CGO_ENABLED=0 GOBIN="${tmp}" \
      go install -trimpath -ldflags="${ldflags}" "${pkg}" >&2); then
    rm -rf "${tmp}"
    log "${pkg} build failed"
    return 1
  fi
  mv "${tmp}/$(basename "${dest}")" "${dest}"
  rm -rf "${tmp}"
}

# install_terraform DEST: builds terraform.
install_terraform() {
  go_install "$1" "github.com/hashicorp/terraform@v${TERRAFORM_VERSION}" \
    "about 2 minutes"
}

# build_in_scratch DEST NAME LABEL BUILD: builds a tool that go install
# cannot: runs the function BUILD in a new scratch directory under the cache
# (never in the repository), with the path it must write the binary to, then
# renames the binary into place. Runs under the tool's lock, so leftovers of
# an interrupted build can be removed first. LABEL is for the progress
# message.
build_in_scratch() {
  local dest="$1" name="$2" label="$3" build="$4"
  [[ -x "${dest}" ]] && return 0
  local src
  rm -rf "${cache_root}/src/${name}".* "${dest}".tmp.*
  mkdir -p "$(dirname "${dest}")" "${cache_root}/src"
  src="$(mktemp -d "${cache_root}/src/${name}.XXXXXX")"
  trap "rm -rf $(printf '%q %q' "${src}" "${dest}.tmp.$$")" EXIT
  log "building ${label} from Go modules (minutes the first time)"
  if ! (cd "${src}" && "${build}" "${dest}.tmp.$$"); then
    rm -rf "${src}" "${dest}.tmp.$$"
    log "${name} build failed"
    return 1
  fi
  mv "${dest}.tmp.$$" "${dest}"
  rm -rf "${src}"
}

# install_tofu DEST: builds OpenTofu. `go install` refuses its module (its
# go.mod has replace directives), so this builds inside a writable copy of the
# module's own source from the module cache, where the replaces apply.
# version.dev=no makes `tofu version` report the release, not "-dev".
install_tofu() {
  build_in_scratch "$1" "tofu-${TOFU_VERSION}" "OpenTofu v${TOFU_VERSION}" build_tofu
}

# build_tofu OUT: build_in_scratch's BUILD for OpenTofu.
build_tofu() {
  local out="$1" mod
  mod="$(GOFLAGS= go mod download -json "github.com/opentofu/opentofu@v${TOFU_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -n "${mod}" && -d "${mod}" ]] || { log "go mod download gave no directory for opentofu"; return 1; }
  cp -R "${mod}/." module &&
    chmod -R u+w module &&
    cd module &&
    GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
      -ldflags "-X github.com/opentofu/opentofu/version.dev=no" \
      -o "${out}" ./cmd/tofu >&2
}

# install_golangci_lint DEST: builds golangci-lint with the Go on PATH
# (GOTOOLCHAIN=local), the Go the repository is built and tested with, so the
# linter reads the code with the same language version and standard library.
install_golangci_lint() {
  GOTOOLCHAIN=local go_install "$1" \
    "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v${GOLANGCI_LINT_VERSION}" \
    "1 to 2 minutes"
}

# install_helm DEST: builds helm, with the -ldflags of helm's own Makefile
# that matter here: the release version (the module alone reports "v3.22")
# and the Kubernetes version `helm lint` checks deprecations against and
# `helm template` renders for by default, the one after the client-go the
# release is built with (Helm's default is 1.20 otherwise).
install_helm() {
  local dest="$1" gomod minor
  [[ -x "${dest}" ]] && return 0
  gomod="$(cd "${cache_root}" && GOFLAGS= go mod download -json "helm.sh/helm/v3@v${HELM_VERSION}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  # client-go v0.N.x is Kubernetes 1.N.
  minor="$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "${gomod}" | head -n 1)"
  [[ -n "${minor}" ]] || { log "no k8s.io/client-go requirement in helm's go.mod (${gomod})"; return 1; }
  go_install "${dest}" "helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}" "1 to 3 minutes" \
    "-X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}
     -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${minor}
     -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${minor}"
}

# install_kubectl DEST: builds kubectl from a small generated module (in the
# scratch directory, never in the repository) that requires k8s.io/kubectl.
install_kubectl() {
  build_in_scratch "$1" "kubectl-${KUBECTL_VERSION}" "kubectl v${KUBECTL_VERSION}" build_kubectl
}

# build_kubectl OUT: build_in_scratch's BUILD for kubectl.
build_kubectl() {
  local out="$1" minor="${KUBECTL_VERSION#1.}"
  minor="${minor%%.*}"
  cat >main.go <<'GO'
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
  printf 'module tools.local/kubectl\n\ngo 1.26\n\nrequire k8s.io/kubectl v0.%s\n' "${KUBECTL_VERSION#1.}" >go.mod &&
    GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
      -ldflags "-X k8s.io/component-base/version.gitVersion=v${KUBECTL_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
      -o "${out}" . >&2
}

[[ $# -eq 1 ]] || usage
mkdir -p "${cache_root}"
cache_root="$(cd "${cache_root}" && pwd -P)"

case "$1" in
  terraform)
    bin="${cache_root}/terraform-${TERRAFORM_VERSION}/terraform"
    [[ -x "${bin}" ]] || with_lock "terraform-${TERRAFORM_VERSION}" install_terraform "${bin}"
    ;;
  tofu)
    bin="${cache_root}/tofu-${TOFU_VERSION}/tofu"
    [[ -x "${bin}" ]] || with_lock "tofu-${TOFU_VERSION}" install_tofu "${bin}"
    ;;
  kubectl)
    bin="${cache_root}/kubectl-${KUBECTL_VERSION}/kubectl"
    [[ -x "${bin}" ]] || with_lock "kubectl-${KUBECTL_VERSION}" install_kubectl "${bin}"
    ;;
  helm)
    bin="${cache_root}/helm-${HELM_VERSION}/helm"
    [[ -x "${bin}" ]] || with_lock "helm-${HELM_VERSION}" install_helm "${bin}"
    ;;
  golangci-lint)
    bin="${cache_root}/golangci-lint-${GOLANGCI_LINT_VERSION}/golangci-lint"
    [[ -x "${bin}" ]] || with_lock "golangci-lint-${GOLANGCI_LINT_VERSION}" install_golangci_lint "${bin}"
    ;;
  *)
    usage
    ;;
esac

[[ -x "${bin}" ]] || { log "$1 missing at ${bin}"; exit 1; }
printf '%s\n' "${bin}"
