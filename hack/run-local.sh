#!/usr/bin/env bash
# `make run` and `make run-cluster`: run the operator.
#
# `make run` (RUN_MODE=local, the default) brings up a local demo on a
# control plane of its own and tears it down on Ctrl-C. It never reads your
# kubeconfig, so it changes no cluster you have:
#   1. etcd and kube-apiserver (hack/setup-envtest.sh) with the CRDs, through
#      hack/localcluster, which also writes an admin kubeconfig and a demo PKI;
#   2. the samples of config/samples but the StateLock (a change freeze the
#      tour applies by hand), plus the client certificate Secret and the CA
#      ConfigMap the HttpBackend sample references, and a ServiceAccount
#      "prometheus" bound to the metrics-reader ClusterRole
#      (config/rbac/metrics_reader_role.yaml), to scrape the manager with;
#   3. the reference state server (cmd/stateserver) on the sample's address,
#      with basic auth (the sample Secret's password) and mutual TLS, keeping
#      its states in a directory; and a local COS double (hack/cosdouble)
#      holding the CosBackend sample's bucket and accepting its credentials;
#   4. the manager, in the foreground, with every CosBackend pointed at the
#      COS double (--cos-service-url) and its metrics served on loopback
#      (HTTPS, scrapes authenticated and authorized, as deployed);
#   5. the stack docs/examples/network, applied with the real Terraform
#      (hack/install-tools.sh terraform) from the rendered ConfigMap and
#      credentials Secret, as a runner pod would, through the script it
#      writes for that, RUN_DIR/runner/run-terraform.sh, which the tour uses
#      too; then the RemoteState sample, which publishes its outputs.
# Once every object is Ready it prints the kubeconfig and what to try.
# Nothing leaves the machine: every server the demo talks to listens on
# loopback, and the CosBackend sample is Ready against the COS double, not
# Tencent Cloud.
# Ctrl-C (SIGINT), SIGTERM or SIGHUP stop all of them; nothing is left running.
#
# `make run-cluster` (RUN_MODE=cluster) uses the cluster of the current
# kubeconfig instead: it prints the context and the server it is about to
# change, installs the CRDs there and runs the manager against it with
# `go run ./cmd/manager`, as kubebuilder projects do.
#
# Arguments are passed to the manager, for example
#   make run ARGS="--zap-log-level=debug"
#
# Environment:
#   RUN_MODE             local (default) or cluster
#   RUN_DIR              working directory of the local demo (default
#                        ${XDG_CACHE_HOME:-$HOME/.cache}/backend-operator/local);
#                        it is emptied at start and holds the kubeconfig, the
#                        demo PKI, the state server's data, the Terraform
#                        runner and the logs
#   RUN_METRICS_ADDRESS  where the demo's manager serves metrics (default
#                        127.0.0.1:18080; 0 turns them off)
#   RUN_DEMO_STACK       true (default) or false: skip step 5
#   KUBECTL              kubectl to use (default: hack/install-tools.sh kubectl)
#   TERRAFORM            terraform to use (default: hack/install-tools.sh terraform)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"

log() { printf 'run-local: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

mode="${RUN_MODE:-local}"
case "${mode}" in
  local | cluster) ;;
  *) die "RUN_MODE must be local (the default: a demo on a control plane of its own) or cluster (the cluster of your kubeconfig, as make run-cluster does), not ${mode}" ;;
esac
kubectl="${KUBECTL:-$(hack/install-tools.sh kubectl)}"

# ---------------------------------------------------------------------------
# RUN_MODE=cluster: the cluster of the current kubeconfig, named before it is
# changed.

if [[ "${mode}" == cluster ]]; then
  context="$("${kubectl}" config current-context 2>/dev/null)" ||
    die "RUN_MODE=cluster: your kubeconfig has no current context; make run starts a local demo instead"
  server="$("${kubectl}" config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  log "RUN_MODE=cluster: installing the CRDs into, and running the manager against, the cluster of context ${context} (${server})"
  "${kubectl}" cluster-info --request-timeout=10s >/dev/null ||
    die "the cluster of context ${context} (${server}) does not answer"
  "${kubectl}" apply --server-side -k config/crd
  exec go run ./cmd/manager "$@"
fi

# ---------------------------------------------------------------------------
# RUN_MODE=local: the demo. From here on every kubectl and the manager use
# the demo's kubeconfig only.

run_dir="${RUN_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/backend-operator/local}"
mkdir -p "${run_dir}"
run_dir="$(cd "${run_dir}" && pwd -P)"
exec 9>"${run_dir}/.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || die "another make run is using ${run_dir}; stop it first or set RUN_DIR"
fi
kubeconfig="${run_dir}/kubeconfig"
export KUBECONFIG="${kubeconfig}"

# The addresses the demo serves on must be free: the state server's is the
# HttpBackend sample's.
listening() { (: <"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
sample_address="$(sed -n 's/^  address: *//p' config/samples/backends_v1alpha1_httpbackend.yaml)"
hostport="${sample_address#*://}"
hostport="${hostport%%/*}"
if listening "${hostport}"; then
  die "${hostport}, where the HttpBackend sample expects its state server, is in use (another make run?); stop what listens there first"
fi
metrics_address="${RUN_METRICS_ADDRESS:-127.0.0.1:18080}"
if [[ "${metrics_address}" != 0 ]] && listening "${metrics_address}"; then
  die "${metrics_address}, where the demo's manager serves metrics, is in use; stop what listens there or set RUN_METRICS_ADDRESS"
fi

log "starting a local demo on a control plane of its own (make run-cluster uses the cluster of your kubeconfig instead)"
rm -rf "${run_dir}/bin" "${run_dir}/pki" "${run_dir}/state" "${run_dir}/logs" "${run_dir}/runner" "${run_dir}"/kubeconfig*
mkdir -p "${run_dir}/bin" "${run_dir}/logs"

assets="$(hack/setup-envtest.sh)"
log "building the manager, the state server, the COS double and the control plane launcher"
go build -o "${run_dir}/bin/" ./cmd/manager ./cmd/stateserver ./hack/localcluster ./hack/cosdouble

# Every process runs in its own session (setsid), so a Ctrl-C on the
# terminal reaches only this script, which stops them in order: the
# manager, the COS double, the state server, then the control plane. The control plane
# launcher also stops when this script disappears without cleaning up.
# Without setsid (not Linux) they share the terminal's Ctrl-C, which each
# of them handles by stopping too.
pids=()
names=()
session=()
if command -v setsid >/dev/null 2>&1; then
  session=(setsid)
fi

# start NAME LOG CMD...: starts CMD in the background in a session of its
# own; LOG "-" keeps the terminal as its output.
start() {
  local name="$1" logfile="$2"
  shift 2
  if [[ "${logfile}" == - ]]; then
    ${session[@]+"${session[@]}"} "$@" </dev/null 9>&- &
  else
    ${session[@]+"${session[@]}"} "$@" </dev/null >"${logfile}" 2>&1 9>&- &
  fi
  pids+=("$!")
  names+=("${name}")
}

# stop PID NAME: SIGTERM to the process group, SIGKILL after 30 seconds.
stop() {
  local pid="$1" name="$2" i
  kill -0 "${pid}" 2>/dev/null || return 0
  log "stopping ${name}"
  kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${pid}" 2>/dev/null; then
    log "${name} did not stop within 30s: killing it"
    kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
  fi
  wait "${pid}" 2>/dev/null || true
}

cleanup() {
  local i
  trap - INT TERM HUP EXIT
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop "${pids[i]}" "${names[i]}"
  done
  log "stopped"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP
trap cleanup EXIT

# wait_for_line PID LOG PATTERN SECONDS NAME: waits until LOG has a line
# matching PATTERN, failing when the process exits first or time runs out.
wait_for_line() {
  local pid="$1" logfile="$2" pattern="$3" seconds="$4" name="$5" i
  for ((i = 0; i < seconds * 10; i++)); do
    if grep -q -- "${pattern}" "${logfile}" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "${pid}" 2>/dev/null; then
      tail -n 20 "${logfile}" >&2 || true
      die "${name} exited; its log is ${logfile}"
    fi
    sleep 0.1
  done
  tail -n 20 "${logfile}" >&2 || true
  die "${name} not ready after ${seconds}s; its log is ${logfile}"
}

# 1. The control plane, with the CRDs installed.
cluster_log="${run_dir}/logs/localcluster.log"
start "kube-apiserver and etcd" "${cluster_log}" \
  env KUBEBUILDER_ASSETS="${assets}" "${run_dir}/bin/localcluster" \
  --dir "${run_dir}" --crd-dir "${root}/config/crd/bases"
wait_for_line "${pids[${#pids[@]}-1]}" "${cluster_log}" '^ready kubeconfig=' 120 "the control plane"
log "control plane up"

k() { "${kubectl}" --kubeconfig "${kubeconfig}" --namespace default "$@"; }

# 2. The samples and the objects they reference. RemoteState and
#    StateHistory samples wait until the demo stack has written a state
#    (step 5), so that they read it at once instead of at their next
#    refresh. StateLock samples are the
#    tour's change freeze: applied by hand, they would lock the demo stack.
k create secret tls demo-state-client-tls \
  --cert="${run_dir}/pki/client.crt" --key="${run_dir}/pki/client.key" >/dev/null
k create configmap demo-state-ca --from-file=ca.crt="${run_dir}/pki/ca.crt" >/dev/null
later=()
for sample in config/samples/*.yaml; do
  [[ "$(basename "${sample}")" == kustomization.yaml ]] && continue
  if grep -q '^kind: StateLock' "${sample}"; then
    continue
  elif grep -qE '^kind: (RemoteState|StateHistory)$' "${sample}"; then
    later+=("${sample}")
  else
    k apply -f "${sample}"
  fi
done

# 2b. Who may scrape the manager's metrics: a ServiceAccount bound to the
#     ClusterRole the project ships for that (docs/monitoring.md).
k apply -f config/rbac/metrics_reader_role.yaml >/dev/null
k create serviceaccount prometheus >/dev/null
k create clusterrolebinding prometheus-metrics-reader --clusterrole=metrics-reader \
  --serviceaccount=default:prometheus >/dev/null

# 3. The state server, where and as the HttpBackend sample expects it.
username="$(k get httpbackend demo -o jsonpath='{.spec.username}')"
password="$(k get secret demo-state-password -o go-template='{{.data.password | base64decode}}')"
server_log="${run_dir}/logs/stateserver.log"
start "the state server" "${server_log}" \
  env STATESERVER_PASSWORD="${password}" "${run_dir}/bin/stateserver" \
  --listen "${hostport}" --data-dir "${run_dir}/state" --username "${username}" \
  --tls-cert "${run_dir}/pki/server.crt" --tls-key "${run_dir}/pki/server.key" \
  --client-ca "${run_dir}/pki/ca.crt"
wait_for_line "${pids[${#pids[@]}-1]}" "${server_log}" 'listening on' 30 "the state server (is ${hostport} free?)"
unset password

# 3b. The COS double, with the CosBackend sample's bucket and credentials:
#     the manager sends it every COS request, so the demo never reaches
#     Tencent Cloud.
cos_bucket="$(k get cosbackend demo-cos -o jsonpath='{.spec.bucket}')"
cos_secret_id="$(k get secret demo-cos-credentials -o go-template='{{.data.secretId | base64decode}}')"
cos_secret_key="$(k get secret demo-cos-credentials -o go-template='{{.data.secretKey | base64decode}}')"
cos_log="${run_dir}/logs/cosdouble.log"
start "the COS double" "${cos_log}" \
  env COSDOUBLE_SECRET_KEY="${cos_secret_key}" "${run_dir}/bin/cosdouble" \
  --secret-id "${cos_secret_id}" --bucket "${cos_bucket}"
wait_for_line "${pids[${#pids[@]}-1]}" "${cos_log}" 'listening on' 30 "the COS double"
unset cos_secret_key
cos_url="$(sed -n 's/^listening on //p' "${cos_log}" | head -n 1)"

# 4. The manager, in the foreground: its log is this terminal's.
start "the manager" - "${run_dir}/bin/manager" --kubeconfig "${kubeconfig}" \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address="${metrics_address}" \
  --cos-service-url="${cos_url}" "$@"
manager_pid="${pids[${#pids[@]}-1]}"

# 5. The demo stack (docs/examples/network) applied with the real Terraform,
#    from the rendered ConfigMap and credentials Secret exactly as a runner
#    pod sees them (docs/runner-pod.md); then the RemoteState samples.
runner="${run_dir}/runner"
run_terraform="${runner}/run-terraform.sh"

# write_runner: writes the runner directory: the stack, backend.tf from the
# rendered ConfigMap, and run-terraform.sh, which runs terraform there with
# the rendered Secret's keys as environment variables, read as it starts
# (as envFrom does when a pod starts). The credentials are never written
# to a file.
write_runner() {
  local terraform
  terraform="${TERRAFORM:-$(hack/install-tools.sh terraform)}" || return 1
  mkdir -p "${runner}/.home"
  : >"${runner}/.home/.terraformrc"
  cp docs/examples/network/main.tf "${runner}/"
  k get configmap demo-backend -o jsonpath='{.data.backend\.tf}' >"${runner}/backend.tf" || return 1
  {
    printf '#!/usr/bin/env bash\n'
    printf '# Written by hack/run-local.sh (make run). Runs terraform in the demo'"'"'s runner\n'
    printf '# directory as a runner pod would: the stack docs/examples/network with\n'
    printf '# backend.tf from the ConfigMap demo-backend, and every key of the Secret\n'
    printf '# demo-backend-credentials as an environment variable (envFrom), read from\n'
    printf '# the demo cluster as it starts. Arguments go to terraform, for example\n'
    printf '#   %s apply -auto-approve -lock-timeout=10m\n' "${run_terraform}"
    printf 'set -euo pipefail\n'
    printf 'cd %q\n' "${runner}"
    printf 'k() { %q --kubeconfig %q --namespace default "$@"; }\n' "${kubectl}" "${kubeconfig}"
    printf 'export HOME=%q TF_CLI_CONFIG_FILE=%q TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1\n' \
      "${runner}/.home" "${runner}/.home/.terraformrc"
    cat <<'RUNNER'
secret=demo-backend-credentials
keys="$(k get secret "${secret}" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}')"
for key in ${keys}; do
  [[ "${key}" =~ ^[A-Z_][A-Z0-9_]*$ ]] || continue
  value="$(k get secret "${secret}" -o go-template="{{index .data \"${key}\" | base64decode}}")"
  export "${key}=${value}"
done
unset value
RUNNER
    printf 'exec %q "$@"\n' "${terraform}"
  } >"${run_terraform}"
  chmod +x "${run_terraform}"
}

run_demo_stack() {
  k wait --for=condition=Ready httpbackend/demo --timeout=60s >/dev/null || return 1
  write_runner || return 1
  "${run_terraform}" init -input=false -no-color &&
    "${run_terraform}" apply -input=false -auto-approve -lock-timeout=30s -no-color
}
terraform_log="${run_dir}/logs/terraform.log"
# ready: the kinds whose objects are all Ready once the demo is up; the
# RemoteState and the StateHistory only when the demo stack wrote the state
# they read.
ready=httpbackend,cosbackend
if [[ "${RUN_DEMO_STACK:-true}" == true ]]; then
  log "applying docs/examples/network with terraform, through the demo HttpBackend"
  if run_demo_stack >"${terraform_log}" 2>&1; then
    log "terraform apply done (log ${terraform_log})"
    ready+=,remotestate,statehistory
  else
    log "the demo stack was not applied, so the RemoteState sample will report StateNotFound; the end of ${terraform_log}:"
    tail -n 25 "${terraform_log}" | sed 's/^/    /' >&2 || true
  fi
fi
for sample in "${later[@]}"; do
  k apply -f "${sample}"
done

# Every object as the tour shows it, before saying the demo is up.
if ! k wait --for=condition=Ready "${ready}" --all --timeout=60s >/dev/null 2>&1; then
  log "not every object is Ready: kubectl get infrastate says"
  k get infrastate >&2 || true
fi

metrics_banner="  (metrics off: RUN_METRICS_ADDRESS=0)"
if [[ "${metrics_address}" != 0 ]]; then
  metrics_banner="Metrics (docs/monitoring.md): HTTPS on ${metrics_address}, each scrape with the token of
a ServiceAccount bound to the metrics-reader ClusterRole, here default/prometheus:

  ${kubectl} get --raw /metrics --server=https://${metrics_address} --insecure-skip-tls-verify --token=\"\$(${kubectl} create token prometheus)\""
fi

cat >&2 <<EOF

run-local: the demo is up. In another terminal:

  export KUBECONFIG=${kubeconfig}
  ${kubectl} get infrastate
  ${kubectl} get httpbackend demo -o wide
  ${kubectl} get configmap demo-backend -o jsonpath='{.data.backend\.tf}'
  ${kubectl} get configmap network-outputs -o yaml

A change freeze: apply the StateLock sample, watch a terraform apply of the
demo stack wait on its lock, then delete the StateLock to let it go on:

  ${kubectl} apply -f ${root}/config/samples/backends_v1alpha1_statelock.yaml
  ${run_terraform} apply -auto-approve -lock-timeout=10m -var=nat_gateway_count=3 &
  ${kubectl} delete statelock release-freeze

${metrics_banner}

  state server      https://${hostport} (log ${server_log})
  COS double        ${cos_url}, bucket ${cos_bucket} (log ${cos_log})
  control plane     log ${cluster_log}
  Terraform runner  ${runner} (log ${terraform_log})

Ctrl-C stops the manager, the COS double, the state server, kube-apiserver
and etcd.

EOF

status=0
wait "${manager_pid}" || status=$?
log "the manager exited with status ${status}"
exit "${status}"
