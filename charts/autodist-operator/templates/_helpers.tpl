{{/*
Names and labels shared by every template. Kubernetes names are at most 63 characters, hence the
truncation; a release named like the chart is not repeated ("autodist-operator", not
"autodist-operator-autodist-operator").
*/}}
{{- define "autodist-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "autodist-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "autodist-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: fixed for the life of a release (a Deployment's selector is immutable). */}}
{{- define "autodist-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "autodist-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "autodist-operator.labels" -}}
helm.sh/chart: {{ include "autodist-operator.chart" . }}
{{ include "autodist-operator.selectorLabels" . }}
app.kubernetes.io/component: operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "autodist-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "autodist-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "autodist-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "autodist-operator.runtimeImage" -}}
{{- printf "%s:%s" .Values.runtimeImage.repository (default .Chart.AppVersion .Values.runtimeImage.tag) }}
{{- end }}

{{- define "autodist-operator.runtimeGpuImage" -}}
{{- printf "%s:%s" .Values.runtimeGpuImage.repository (default .Chart.AppVersion .Values.runtimeGpuImage.tag) }}
{{- end }}

{{- define "autodist-operator.leaseName" -}}
{{- default (include "autodist-operator.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "autodist-operator.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/*
The operator's rules on jobs and the objects it creates for them: the same in the ClusterRole
(all namespaces) and in each per-namespace Role. Each verb is there because the operator uses it;
docs/operator.md has the table, and tests/deploy/check_chart.py fails on any extra verb.
*/}}
{{- define "autodist-operator.jobRules" -}}
# Exactly the requests the operator makes (tests/deploy/check_operator_rbac.py compares these
# rules with the requests of the whole end-to-end suite). Jobs: the informer lists and watches
# them, and ttlSecondsAfterFinished deletes a finished one; the operator never writes a spec or
# metadata (no finalizers: garbage collection removes the children).
- apiGroups: ["autodist.io"]
  resources: ["autodistjobs"]
  verbs: ["list", "watch", "delete"]
# Conditions, replica counts and progress: one PUT of the status subresource per change.
- apiGroups: ["autodist.io"]
  resources: ["autodistjobs/status"]
  verbs: ["update"]
# Pods, Services and ConfigMaps carry an ownerReference to their job with blockOwnerDeletion, so
# a foreground delete of the job waits for them; the OwnerReferencesPermissionEnforcement
# admission plugin allows setting that only with update on the owner's finalizers.
- apiGroups: ["autodist.io"]
  resources: ["autodistjobs/finalizers"]
  verbs: ["update"]
# PS and worker pods: created per job, deleted for gang restarts, suspend and cleanPodPolicy; get
# reads who holds a pod's name when a create meets AlreadyExists (an earlier job's pod).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete"]
# The headless Service pods find each other through and the <job>-autodist ConfigMap holding the
# compiled Strategy: created once, removed by garbage collection with the job (never deleted by
# the operator); get reads the ConfigMap that holds a job's model, and who holds a name.
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create"]
# An Event for every transition (kubectl describe adj); patch aggregates repeated ones.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.networkPolicy.enabled }}
# One NetworkPolicy per job, created once and removed by garbage collection with the job; the
# informer lists and watches them.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["list", "watch", "create"]
{{- end }}
{{- if .Values.jobTls.enabled }}
# One Secret per job (its CA and its members' certificates), created once and removed by
# garbage collection with the job; the informer lists and watches them (only those the operator
# labelled); get reads who holds the name when a create meets AlreadyExists.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch", "create"]
{{- end }}
{{- if .Values.gangScheduling.enabled }}
# Gang scheduling: one PodGroup per job, minMember = all of its pods.
- apiGroups: [{{ include "autodist-operator.podGroupApiGroup" . | quote }}]
  resources: ["podgroups"]
  verbs: ["create", "get", "delete"]
{{- end }}
{{- end }}

{{- define "autodist-operator.podGroupApiGroup" -}}
{{- if eq .Values.gangScheduling.provider "volcano" }}scheduling.volcano.sh{{ else }}scheduling.x-k8s.io{{ end }}
{{- end }}

{{/* A map of labels as the operator's flags take them: k=v,k2=v2, sorted by key. */}}
{{- define "autodist-operator.labelList" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end }}
