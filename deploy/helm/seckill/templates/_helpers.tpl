{{/* The release's resource name prefix. */}}
{{- define "seckill.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of one component (api, worker, migrate): root and component. */}}
{{- define "seckill.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every object's labels: root and component. */}}
{{- define "seckill.labels" -}}
{{ include "seckill.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "seckill.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "seckill.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "seckill.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The TLS material of the dependencies: name → its values and variables. */}}
{{- define "seckill.tlsDeps" -}}
temporal: {enable: TEMPORAL_TLS, ca: TEMPORAL_TLS_SERVER_CA_CERT_PATH, cert: TEMPORAL_TLS_CLIENT_CERT_PATH, key: TEMPORAL_TLS_CLIENT_KEY_PATH}
redis: {enable: SECKILL_REDIS_TLS, ca: SECKILL_REDIS_CA_FILE, cert: SECKILL_REDIS_CERT_FILE, key: SECKILL_REDIS_KEY_FILE}
mysql: {ca: SECKILL_MYSQL_CA_FILE, cert: SECKILL_MYSQL_CERT_FILE, key: SECKILL_MYSQL_KEY_FILE}
{{- end -}}

{{/* The secret variables, read from existingSecret by reference: required
(the worker's draw key too: it alone seals draw seeds), then read when
present. root and worker. */}}
{{- define "seckill.secretEnv" -}}
{{- $required := list "SECKILL_MYSQL_DSN" "SECKILL_JWT_SECRET" "SECKILL_WEBHOOK_SECRET" "SECKILL_ADMIN_TOKEN" }}
{{- if .worker }}{{ $required = append $required "SECKILL_DRAW_KEY" }}{{ end }}
{{- range $required }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: {name: {{ $.root.Values.existingSecret }}, key: {{ . }}}
{{- end }}
{{- range list "SECKILL_REDIS_PASSWORD" "TEMPORAL_API_KEY" "SECKILL_PAYMENT_PROVIDER_SECRET" "SECKILL_STRIPE_SECRET_KEY" "SECKILL_STRIPE_WEBHOOK_SECRET" "SECKILL_EVENTS_SECRET" "SECKILL_RISK_SECRET" }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: {name: {{ $.root.Values.existingSecret }}, key: {{ . }}, optional: true}
{{- end }}
{{- end -}}

{{/* The environment of api, worker and the migration job: root, extra (a
component's own env map), worker (the worker's secrets). */}}
{{- define "seckill.env" -}}
{{- $v := .root.Values -}}
- name: TEMPORAL_ADDRESS
  value: {{ $v.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $v.temporal.namespace | quote }}
{{- with $v.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
- name: SECKILL_TASK_QUEUE
  value: {{ $v.temporal.taskQueue | quote }}
- name: SECKILL_REDIS_ADDR
  value: {{ $v.redis.addr | quote }}
- name: SECKILL_REDIS_MASTER
  value: {{ $v.redis.master | quote }}
- name: SECKILL_REDIS_PREFIX
  value: {{ $v.redis.prefix | quote }}
{{- range $name, $vars := include "seckill.tlsDeps" . | fromYaml }}
{{- $tls := (get $v $name).tls }}
{{- if $tls.enabled }}
{{- with $vars.enable }}
- name: {{ . }}
  value: "true"
{{- end }}
{{- if $tls.secret }}
{{- if $tls.ca }}
- name: {{ $vars.ca }}
  value: /etc/seckill/tls/{{ $name }}/ca.crt
{{- end }}
{{- if $tls.clientCert }}
- name: {{ $vars.cert }}
  value: /etc/seckill/tls/{{ $name }}/tls.crt
- name: {{ $vars.key }}
  value: /etc/seckill/tls/{{ $name }}/tls.key
{{- end }}
{{- else if $tls.clientCert }}
{{- fail (printf "%s.tls.clientCert needs %s.tls.secret (the Secret with tls.crt and tls.key)" $name $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- with $v.paymentProvider }}
- name: SECKILL_PAYMENT_PROVIDER
  value: {{ . | quote }}
{{- end }}
{{- range $k, $val := merge (dict) .extra $v.env }}
- name: {{ $k }}
  value: {{ $val | toString | quote }}
{{- end }}
{{- include "seckill.secretEnv" (dict "root" .root "worker" .worker) }}
{{- end -}}

{{/* Volumes: /tmp (the root filesystem is read-only) and the TLS Secrets. */}}
{{- define "seckill.volumes" -}}
- name: tmp
  emptyDir: {}
{{- range $name, $_ := include "seckill.tlsDeps" . | fromYaml }}
{{- $tls := (get $.Values $name).tls }}
{{- if and $tls.enabled $tls.secret }}
- name: tls-{{ $name }}
  secret:
    secretName: {{ $tls.secret }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "seckill.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range $name, $_ := include "seckill.tlsDeps" . | fromYaml }}
{{- $tls := (get $.Values $name).tls }}
{{- if and $tls.enabled $tls.secret }}
- name: tls-{{ $name }}
  mountPath: /etc/seckill/tls/{{ $name }}
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}

{{/* What every pod of the chart shares: root, and hook (a pre-install hook
runs before the chart's ServiceAccount exists, so on the namespace's default). */}}
{{- define "seckill.podSpec" -}}
{{- $hook := .hook -}}
{{- with .root -}}
{{- if not $hook -}}
serviceAccountName: {{ include "seckill.serviceAccountName" . }}
{{ end -}}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "seckill.volumes" . | nindent 2 }}
{{- end }}
{{- end -}}
