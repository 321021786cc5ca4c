#!/usr/bin/env bash
# Deploys the operator with the manager image set to IMG, or removes it:
#   IMG=registry.example.com/backend-operator:v0.1.0 hack/deploy.sh apply config/default
#   hack/deploy.sh delete config/default
#
# apply renders DIR through a temporary kustomization, outside the
# repository, whose images: entry sets the manager's image to IMG, checks
# that every container image of the result is IMG, and only then applies it
# (server-side). It fails, and applies nothing, when IMG is not an image
# reference with a tag or a digest, or when the result holds no image or
# another image than IMG (one the entry did not set).
#
# delete renders DIR as it is (the image does not change what is deleted)
# and deletes what it lists.
#
# Environment:
#   IMG        the manager image (apply only)
#   KUBECTL    default kubectl
#   KUSTOMIZE  the command that renders a directory, default "$KUBECTL kustomize"
set -euo pipefail

# managerImage is the image name config/manager/kustomization.yaml gives the
# manager container, and so the name the images: entry replaces.
managerImage=ghcr.io/infrastate/backend-operator

KUBECTL="${KUBECTL:-kubectl}"
read -r -a kustomize <<<"${KUSTOMIZE:-${KUBECTL} kustomize}"

fail() {
  printf 'deploy: %s\n' "$*" >&2
  exit 1
}

usage() {
  printf 'usage: IMG=<image> %s apply DIR | %s delete DIR\n' "$0" "$0" >&2
  exit 2
}

# The grammar of an image reference (github.com/distribution/reference),
# which is also what the kubelet accepts: an optional registry host, a
# lower-case repository path, then a tag, a digest or both.
component='[a-z0-9]+(([_.]|__|-+)[a-z0-9]+)*'
host='[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?'
tag='[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'
digest='[a-z0-9]+([+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}'
reference="^(${host}/)?${component}(/${component})*(:${tag})?(@${digest})?$"

# images_entry prints the images: entry that sets managerImage to IMG.
images_entry() {
  [[ -n "${IMG:-}" ]] || fail "IMG is not set: run make deploy IMG=<registry>/<name>:<tag>"
  [[ "${IMG}" =~ ${reference} ]] || fail "IMG=${IMG} is not an image reference (<registry>/<name>:<tag>, lower-case name)"
  local name="${IMG%%@*}" newTag="" newDigest=""
  [[ "${IMG}" == *@* ]] && newDigest="${IMG#*@}"
  # A colon after the last slash starts the tag; one before it is a port.
  if [[ "${name##*/}" == *:* ]]; then
    newTag="${name##*:}"
    name="${name%:*}"
  fi
  [[ -n "${newTag}${newDigest}" ]] ||
    fail "IMG=${IMG} has neither a tag nor a digest: name the image to deploy, for example ${IMG}:v0.1.0"
  printf 'images:\n  - name: %s\n    newName: "%s"\n' "${managerImage}" "${name}"
  [[ -z "${newTag}" ]] || printf '    newTag: "%s"\n' "${newTag}"
  [[ -z "${newDigest}" ]] || printf '    digest: "%s"\n' "${newDigest}"
}

# relative_to_root prints the path of directory $1 from the file system
# root, as ../.. segments from directory $2: kustomize refuses absolute
# resource paths.
relative_to_root() {
  local from="$2" up=""
  while [[ "${from}" != / ]]; do
    up+="../"
    from="$(dirname "${from}")"
  done
  printf '%s%s' "${up}" "${1#/}"
}

# check_images fails unless every container image in the rendered file $1
# is IMG.
check_images() {
  local images
  images="$(sed -nE 's/^[[:space:]]*(- )?image:[[:space:]]*//p' "$1" | sort -u | tr '\n' ' ')"
  images="${images% }"
  [[ -n "${images}" ]] || fail "${dir} renders no container image for IMG to set"
  [[ "${images}" == "${IMG}" ]] ||
    fail "${dir} renders image(s) ${images}, not only ${IMG}: the images: entry replaces ${managerImage}, which must stay the manager's image name in config/manager/kustomization.yaml"
}

[[ $# -eq 2 ]] || usage
action="$1"
dir="$2"
[[ -d "${dir}" ]] || fail "${dir} is not a directory"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
tmp="$(cd "${tmp}" && pwd -P)"
rendered="${tmp}/rendered.yaml"

case "${action}" in
  apply)
    overlay="${tmp}/overlay"
    mkdir "${overlay}"
    entry="$(images_entry)"
    {
      printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n'
      printf 'resources:\n  - %s\n' "$(relative_to_root "$(cd "${dir}" && pwd -P)" "${overlay}")"
      printf '%s\n' "${entry}"
    } >"${overlay}/kustomization.yaml"
    "${kustomize[@]}" "${overlay}" >"${rendered}" || fail "rendering ${dir} failed"
    check_images "${rendered}"
    "${KUBECTL}" apply --server-side -f "${rendered}"
    ;;
  delete)
    "${kustomize[@]}" "${dir}" >"${rendered}" || fail "rendering ${dir} failed"
    "${KUBECTL}" delete --ignore-not-found -f "${rendered}"
    ;;
  *)
    usage
    ;;
esac
