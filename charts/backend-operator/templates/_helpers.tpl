{{/*
The chart's name, or nameOverride.
*/}}
{{- define "backend-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: fullnameOverride, or the release name
followed by the chart's name unless the release name already holds it.
*/}}
{{- define "backend-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "backend-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "backend-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the manager's Pods.
*/}}
{{- define "backend-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "backend-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
The label that assigns an object of the operator's kinds to a shard:
Flux's, controllers.ShardLabel.
*/}}
{{- define "backend-operator.shardLabel" -}}
sharding.fluxcd.io/key
{{- end }}

{{/*
The name of a manager's Deployment: the name prefix for the main manager,
<prefix>-shard-<shard> for a shard's. Called with a dict of "root" and
"shard" (empty for the main manager), as the helpers below. A shard's
name is a DNS label of at most 63 characters (values.schema.json), the
prefix at most 63 too: the name, at most 133, is a valid Deployment name
(at most 253).
*/}}
{{- define "backend-operator.managerName" -}}
{{- if .shard }}
{{- printf "%s-shard-%s" (include "backend-operator.fullname" .root) .shard }}
{{- else }}
{{- include "backend-operator.fullname" .root }}
{{- end }}
{{- end }}

{{/*
The labels that tell a manager's Deployment and Pods from the others':
the main manager's component is manager; a shard's is manager-shard,
with the label backends.infrastate.io/shard naming the shard.

A Deployment's selector cannot change once created, and the main one
selects its Pods by the labels of backend-operator.selectorLabels
(app.kubernetes.io/name, app.kubernetes.io/instance and
app.kubernetes.io/component=manager) since before there were shards. So
that it keeps that selector, and an upgrade that adds shards changes no
selector, a shard's Pods carry another component: no Pod matches two
Deployments' selectors, and each Deployment owns only its own Pods. The
shard label sets the shards' Pods apart from one another.
*/}}
{{- define "backend-operator.managerLabels" -}}
{{- if .shard -}}
app.kubernetes.io/component: manager-shard
backends.infrastate.io/shard: {{ .shard | quote }}
{{- else -}}
app.kubernetes.io/component: manager
{{- end }}
{{- end }}

{{/*
The selector of a manager's Deployment, and the labels of its Pods:
backend-operator.selectorLabels for the main manager, and for a shard's
the same name and instance with its own backend-operator.managerLabels.
*/}}
{{- define "backend-operator.managerSelectorLabels" -}}
{{- if .shard -}}
app.kubernetes.io/name: {{ include "backend-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{ include "backend-operator.managerLabels" . }}
{{- else }}
{{- include "backend-operator.selectorLabels" .root }}
{{- end }}
{{- end }}

{{/*
The selector of the metrics Service: every manager's Pods. Without shards
it is backend-operator.selectorLabels, as it always was; with shards it
leaves out the component, which tells the main manager's Pods from the
shards' (backend-operator.managerLabels): the release has no other Pods.
A Service's selector may change on upgrade.
*/}}
{{- define "backend-operator.metricsSelectorLabels" -}}
{{- if .Values.shards -}}
app.kubernetes.io/name: {{ include "backend-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- else }}
{{- include "backend-operator.selectorLabels" . }}
{{- end }}
{{- end }}

{{/*
A manager's --leader-election-id, empty to leave the manager's default:
leaderElectionID for the main manager; for a shard's,
<leaderElectionID>-<shard>, or <the manager's default>-<shard> when
leaderElectionID is empty (the default is cmd/manager's
defaultLeaderElectionID, test/chart checks it), so that each manager
holds a Lease of its own, named after the main one's. Fails when the name
is longer than a Lease name may be.
*/}}
{{- define "backend-operator.leaderElectionID" -}}
{{- if .shard }}
{{- $id := printf "%s-%s" (.root.Values.leaderElectionID | default "backend-operator.backends.infrastate.io") .shard }}
{{- if gt (len $id) 253 }}
{{- fail (printf "shard %s: its Lease name, %s, is longer than 253 characters: shorten leaderElectionID or the shard's name" .shard $id) }}
{{- end }}
{{- $id }}
{{- else }}
{{- .root.Values.leaderElectionID }}
{{- end }}
{{- end }}

{{/*
A manager's --watch-label-selector, Flux's: for a shard's, the objects
labelled with its name; for the main manager, when there are shards, the
objects without the label; without shards, empty (every object).
*/}}
{{- define "backend-operator.watchLabelSelector" -}}
{{- if .shard }}
{{- printf "%s in (%s)" (include "backend-operator.shardLabel" .root) .shard }}
{{- else if .root.Values.shards }}
{{- printf "!%s" (include "backend-operator.shardLabel" .root) }}
{{- end }}
{{- end }}

{{/*
The manager's ServiceAccount.
*/}}
{{- define "backend-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "backend-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The manager's image: repository@digest when a digest is set, else
repository:tag, the tag defaulting to the chart's appVersion.
*/}}
{{- define "backend-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The ranges the manager never connects to, comma separated:
deniedAddressCIDRs, or when it is empty or null the default list, the one
values.yaml ships and the manager's own (test/chart checks both). An empty
--denied-address-cidrs would deny nothing, where an empty
allowedAddressCIDRs leaves its flag unset: an empty list must not turn the
deny list off.
*/}}
{{- define "backend-operator.deniedAddressCIDRs" -}}
{{- $default := list
  "169.254.0.0/16" "fe80::/10" "100.100.100.200/32" "168.63.129.16/32" "192.0.0.192/32"
  "fd00:ec2::254/128" "fd00:ec2::23/128" "fd20:ce::254/128" "fd00:c1::a9fe:a9fe/128" "fd00:42::42/128"
  "64:ff9b::a9fe:0/112" "64:ff9b::6464:64c8/128" "64:ff9b::a83f:8110/128" "64:ff9b::c000:c0/128" }}
{{- join "," (.Values.deniedAddressCIDRs | default $default) }}
{{- end }}

{{/*
The manager's rules, the same in a ClusterRole and in the Role of each
watched namespace: those of config/rbac/role.yaml, which controller-gen
generates from the controllers' RBAC markers and `make manifests` copies
into files/.
*/}}
{{- define "backend-operator.managerRules" -}}
{{- (.Files.Get "files/manager-role.yaml" | fromYaml).rules | toYaml }}
{{- end }}

{{/*
The subject of the manager's bindings.
*/}}
{{- define "backend-operator.subject" -}}
- kind: ServiceAccount
  name: {{ include "backend-operator.serviceAccountName" . | quote }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The labels of an alert: its severity, quoted, then
metrics.prometheusRule.alertLabels. Called with a dict of "severity" and
"alertLabels".
*/}}
{{- define "backend-operator.alertLabels" -}}
severity: {{ .severity | quote }}
{{- with .alertLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The series named by the argument with namespace holding the object's
namespace: a scrape that does not keep the series' own namespace label
renames it exported_namespace (templates/prometheusrule.yaml).
*/}}
{{- define "backend-operator.objectNamespace" -}}
label_replace({{ . }}, "namespace", "$1", "exported_namespace", "(.+)")
{{- end }}

{{/*
The manager flags the chart sets itself, each with what to use instead of
setting it in extraArgs: the value that sets it, or why none does.
docs/helm.md lists them.
*/}}
{{- define "backend-operator.ownedFlags" -}}
{{- dict
  "watch-namespaces" "use the value watchNamespaces instead"
  "watch-label-selector" "use the value shards instead"
  "leader-elect" "use the value leaderElection instead"
  "leader-election-id" "use the value leaderElectionID instead"
  "leader-election-namespace" "the Lease is in the release namespace, where the chart grants the Role for it: install the release in the namespace it belongs in instead"
  "health-probe-bind-address" "the Pod's liveness and readiness probes read port 8081, which no value changes"
  "metrics-bind-address" "use the value metrics.service.port instead (the port of the metrics Service, behind which the manager serves metrics on 8443)"
  "secret-reference-policy" "use the value secretReferencePolicy instead"
  "denied-address-cidrs" "use the value deniedAddressCIDRs instead"
  "allowed-address-cidrs" "use the value allowedAddressCIDRs instead"
  "max-concurrent-probes" "use the value maxConcurrentProbes instead"
  "max-concurrent-probes-per-namespace" "use the value maxConcurrentProbesPerNamespace instead"
  "max-concurrent-decryptions" "use the value maxConcurrentDecryptions instead"
  "default-probe-interval" "use the value defaultProbeInterval instead"
  "read-memory-per-namespace" "use the value budgets.readMemoryPerNamespace instead"
  "read-memory-total" "use the value budgets.readMemoryTotal instead"
  "api-storage-per-namespace" "use the value budgets.apiStoragePerNamespace instead"
  "api-storage-total" "use the value budgets.apiStorageTotal instead"
  "key-derivation-cpu-per-namespace" "use the value budgets.keyDerivationCPUPerNamespace instead"
  "key-derivation-cpu-total" "use the value budgets.keyDerivationCPUTotal instead"
  | toJson }}
{{- end }}

{{/*
Fails the render when an argument of extraArgs sets a flag of
backend-operator.ownedFlags (--flag or --flag=value), naming each such
argument, its flag and what to use instead, and listing the flags the
chart owns. It renders nothing.
*/}}
{{- define "backend-operator.checkExtraArgs" -}}
{{- $owned := include "backend-operator.ownedFlags" . | fromJson }}
{{- $refused := list }}
{{- range $i, $arg := .Values.extraArgs }}
{{- $flag := regexFind "^--[^=]+" (toString $arg) | trimPrefix "--" }}
{{- if hasKey $owned $flag }}
{{- $refused = append $refused (printf "extraArgs[%d] sets --%s, which the chart owns: %s" $i $flag (get $owned $flag)) }}
{{- end }}
{{- end }}
{{- if $refused }}
{{- $flags := list }}
{{- range keys $owned | sortAlpha }}
{{- $flags = append $flags (printf "--%s" .) }}
{{- end }}
{{- fail (printf "%s. The chart owns %s; extraArgs may set any other manager flag." (join "; " $refused) (join ", " $flags)) }}
{{- end }}
{{- end }}
