#!/usr/bin/env bash
# Fails when `make manifests generate` would change the tree under the paths
# it is given (the Makefile's GENERATED_PATHS). It generates in a scratch
# copy, so it never rewrites a file in the working tree.
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 PATH... (make verify-generated passes GENERATED_PATHS)" >&2; exit 2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

cd "${root}"
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "${scratch}/" 2>/dev/null || true
make -s -C "${scratch}" manifests generate >/dev/null

status=0
for path in "$@"; do
  if ! diff -ru --exclude='*_test.go' "${root}/${path}" "${scratch}/${path}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "generated files are stale: run 'make manifests generate' and commit the result" >&2
fi
exit "${status}"
