{{/*
One manager's Deployment, the main one or a shard's, called with a dict of
"root", the chart's context, and "shard", the shard's name (empty for the
main manager). Every value applies to each manager alike; a shard's
Deployment differs from the main one only in its name, its labels and
selector (backend-operator.managerLabels), its --watch-label-selector and
its Lease (backend-operator.leaderElectionID); test/chart/shards_test.go
checks it.

The manager, hardened as config/manager: non-root, read-only root
filesystem, no capabilities, the RuntimeDefault seccomp profile. It meets
the restricted Pod Security Standard, which docs/helm.md labels the
namespace to enforce.
*/}}
{{- define "backend-operator.deployment" -}}
{{- $root := .root }}
{{- $values := $root.Values }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "backend-operator.managerName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "backend-operator.labels" $root | nindent 4 }}
    {{- include "backend-operator.managerLabels" . | nindent 4 }}
spec:
  replicas: {{ $values.replicaCount }}
  selector:
    matchLabels:
      {{- include "backend-operator.managerSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/default-container: manager
        {{- with $values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "backend-operator.managerSelectorLabels" . | nindent 8 }}
        {{- with $values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "backend-operator.serviceAccountName" $root | quote }}
      # The manager releases its leader election Lease on SIGTERM, so a
      # rolling update hands over in seconds.
      terminationGracePeriodSeconds: 10
      {{- with $values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.priorityClassName }}
      priorityClassName: {{ . | quote }}
      {{- end }}
      {{- with $values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        # The image's nonroot user, also for images built without USER.
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: manager
          image: {{ include "backend-operator.image" $root | quote }}
          imagePullPolicy: {{ $values.image.pullPolicy | quote }}
          command: ["/manager"]
          args:
            {{- if $values.leaderElection }}
            - --leader-elect
            {{- with include "backend-operator.leaderElectionID" . }}
            - {{ printf "--leader-election-id=%s" . | quote }}
            {{- end }}
            {{- end }}
            - --health-probe-bind-address=:8081
            - --metrics-bind-address=:8443
            {{- with $values.watchNamespaces }}
            - {{ printf "--watch-namespaces=%s" (join "," .) | quote }}
            {{- end }}
            {{- with include "backend-operator.watchLabelSelector" . }}
            - {{ printf "--watch-label-selector=%s" . | quote }}
            {{- end }}
            - {{ printf "--secret-reference-policy=%s" $values.secretReferencePolicy | quote }}
            - {{ printf "--denied-address-cidrs=%s" (include "backend-operator.deniedAddressCIDRs" $root) | quote }}
            {{- with $values.allowedAddressCIDRs }}
            - {{ printf "--allowed-address-cidrs=%s" (join "," .) | quote }}
            {{- end }}
            - --max-concurrent-probes={{ $values.maxConcurrentProbes }}
            - --max-concurrent-probes-per-namespace={{ $values.maxConcurrentProbesPerNamespace }}
            - --max-concurrent-decryptions={{ $values.maxConcurrentDecryptions }}
            - {{ printf "--default-probe-interval=%s" $values.defaultProbeInterval | quote }}
            {{- with $values.budgets }}
            - {{ printf "--read-memory-per-namespace=%s" .readMemoryPerNamespace | quote }}
            - {{ printf "--read-memory-total=%s" .readMemoryTotal | quote }}
            - {{ printf "--api-storage-per-namespace=%s" .apiStoragePerNamespace | quote }}
            - {{ printf "--api-storage-total=%s" .apiStorageTotal | quote }}
            - {{ printf "--key-derivation-cpu-per-namespace=%s" .keyDerivationCPUPerNamespace | quote }}
            - {{ printf "--key-derivation-cpu-total=%s" .keyDerivationCPUTotal | quote }}
            {{- end }}
            {{- include "backend-operator.checkExtraArgs" $root }}
            {{- range $values.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          env:
            # The Go runtime collects harder near the memory limit instead
            # of being OOM-killed at it.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  resource: limits.memory
          ports:
            - name: metrics
              containerPort: 8443
              protocol: TCP
            - name: health
              containerPort: 8081
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
          {{- with $values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            # The one writable directory (os.TempDir): each state on its
            # way between two stores, a backend and a StateHistory's
            # destination, waits here in a file of its own, never in
            # memory.
            - name: spool
              mountPath: /tmp
      volumes:
        - name: spool
          emptyDir:
            sizeLimit: {{ $values.spoolSizeLimit | quote }}
{{- end }}
