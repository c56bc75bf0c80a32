package seckill_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/seckill/seckill/internal/app"
)

const chartDir = "deploy/helm/seckill"

// chartKinds are the kinds the chart renders, each with the API type it
// must decode into.
var chartKinds = map[string]func() any{
	"apps/v1 Deployment":                      func() any { return &appsv1.Deployment{} },
	"v1 Service":                              func() any { return &corev1.Service{} },
	"v1 ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"batch/v1 Job":                            func() any { return &batchv1.Job{} },
	"autoscaling/v2 HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1 PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1 ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1 PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// requiredSecrets are the secret variables each pod reads from the
// existing Secret (values.yaml: existingSecret); the draw key is the
// workers' alone.
var requiredSecrets = map[string][]string{
	"api":     {"SECKILL_MYSQL_DSN", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN"},
	"worker":  {"SECKILL_MYSQL_DSN", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN", "SECKILL_DRAW_KEY"},
	"migrate": {"SECKILL_MYSQL_DSN", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN"},
}

// isSecret says whether a variable holds a secret, by its name.
var isSecret = regexp.MustCompile(`^SECKILL_MYSQL_DSN$|SECRET|TOKEN|PASSWORD|_KEY$`).MatchString

// helmCmd is bin/helm with args (see pinnedTool).
func helmCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(pinnedTool(t, "helm"), args...)
}

// helm runs bin/helm and returns its output; it must succeed.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := helmCmd(t, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), stderr.String())
	return out
}

// chart is what `helm template` rendered, each object decoded strictly
// into its API type, by kind and name.
type chart map[string]any

func (c chart) get(t *testing.T, kind, name string) any {
	t.Helper()
	obj, ok := c[kind+" "+name]
	require.True(t, ok, "the chart renders no %s %s", kind, name)
	return obj
}

// renderChart renders the chart as release "seckill" with the given
// values files; an unknown kind or field anywhere fails the test.
func renderChart(t *testing.T, values ...string) chart {
	t.Helper()
	args := []string{"template", "seckill", chartDir}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	out := helm(t, args...)
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	c := chart{}
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		if meta.Kind == "" && len(bytes.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAll(doc, nil))) == 0 {
			continue // only comments
		}
		newObj, ok := chartKinds[meta.APIVersion+" "+meta.Kind]
		require.True(t, ok, "the chart renders %s %s, a kind this test does not know (a Secret? secrets are referenced, never rendered):\n%s", meta.APIVersion, meta.Kind, doc)
		obj := newObj()
		require.NoError(t, yaml.UnmarshalStrict(doc, obj), "%s %s does not decode strictly into its API type:\n%s", meta.Kind, meta.Name, doc)
		key := meta.Kind + " " + meta.Name
		require.NotContains(t, c, key, "rendered twice")
		c[key] = obj
	}
	return c
}

// The chart, rendered with its default values and with the production
// example, is a set of valid Kubernetes objects (each decoded strictly into
// its k8s.io/api or prometheus-operator type) that run the processes as the
// operations guide says: probes on /readyz and /healthz, non-root on a
// read-only root filesystem with resources, the API's grace period covering
// its drain, migrations as a Helm hook, an HPA and PodDisruptionBudgets
// that point at the pods, secrets only by reference, TLS files from mounted
// Secrets, and the alerting rules of alerts.yml as they are.
func TestHelmChart(t *testing.T) {
	for name, values := range map[string][]string{
		"default values": nil,
		"production":     {"deploy/helm/values-production.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			c := renderChart(t, values...)
			api := c.get(t, "Deployment", "seckill-api").(*appsv1.Deployment)
			worker := c.get(t, "Deployment", "seckill-worker").(*appsv1.Deployment)
			migrate := c.get(t, "Job", "seckill-migrate").(*batchv1.Job)

			for _, pod := range []struct {
				name string
				spec corev1.PodTemplateSpec
			}{{"api", api.Spec.Template}, {"worker", worker.Spec.Template}, {"migrate", migrate.Spec.Template}} {
				checkPod(t, pod.name, pod.spec.Spec)
			}
			for _, d := range []*appsv1.Deployment{api, worker} {
				checkProbes(t, d)
			}
			require.Equal(t, []string{"api"}, api.Spec.Template.Spec.Containers[0].Args)
			require.Equal(t, []string{"worker"}, worker.Spec.Template.Spec.Containers[0].Args)
			require.Equal(t, []string{"migrate"}, migrate.Spec.Template.Spec.Containers[0].Args)

			// The drain: Kubernetes's preStop sleep, then SIGTERM: /readyz
			// 503 while serving for SECKILL_DRAIN_DELAY, then the drain of
			// requests and starts; all before the grace period ends.
			ctr := api.Spec.Template.Spec.Containers[0]
			require.NotNil(t, ctr.Lifecycle, "the API has a preStop hook")
			require.NotNil(t, ctr.Lifecycle.PreStop, "the API has a preStop hook")
			require.NotNil(t, ctr.Lifecycle.PreStop.Sleep, "preStop sleeps (the image has no shell)")
			delay, err := time.ParseDuration(envValue(t, ctr, "SECKILL_DRAIN_DELAY"))
			require.NoError(t, err)
			need := time.Duration(ctr.Lifecycle.PreStop.Sleep.Seconds)*time.Second + delay + app.ShutdownTimeout
			grace := api.Spec.Template.Spec.TerminationGracePeriodSeconds
			require.NotNil(t, grace)
			require.GreaterOrEqual(t, time.Duration(*grace)*time.Second, need, "terminationGracePeriodSeconds covers preStop + drain delay + shutdown")

			// Migrations run before the release's pods, on install and upgrade.
			hooks := strings.Split(migrate.Annotations["helm.sh/hook"], ",")
			require.Contains(t, hooks, "pre-install")
			require.Contains(t, hooks, "pre-upgrade")
			require.Equal(t, corev1.RestartPolicyNever, migrate.Spec.Template.Spec.RestartPolicy)

			// Services, the HPA and the PDBs find the pods they are for.
			svcAPI := c.get(t, "Service", "seckill-api").(*corev1.Service)
			svcWorker := c.get(t, "Service", "seckill-worker").(*corev1.Service)
			for _, p := range []struct {
				svc *corev1.Service
				d   *appsv1.Deployment
			}{{svcAPI, api}, {svcWorker, worker}} {
				require.True(t, labels.SelectorFromSet(p.svc.Spec.Selector).Matches(labels.Set(p.d.Spec.Template.Labels)), "Service %s selects %s's pods", p.svc.Name, p.d.Name)
				for _, port := range p.svc.Spec.Ports {
					require.True(t, slices.ContainsFunc(p.d.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.TargetPort.StrVal }),
						"Service %s targets port %q, which %s does not declare", p.svc.Name, port.TargetPort.StrVal, p.d.Name)
				}
			}
			hpa := c.get(t, "HorizontalPodAutoscaler", "seckill-api").(*autoscalingv2.HorizontalPodAutoscaler)
			require.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: api.Name}, hpa.Spec.ScaleTargetRef)
			require.Nil(t, api.Spec.Replicas, "the HPA owns the API's replica count")
			require.GreaterOrEqual(t, *hpa.Spec.MinReplicas, int32(2), "a rollout or a node drain keeps an API serving")
			for _, d := range []*appsv1.Deployment{api, worker} {
				pdb := c.get(t, "PodDisruptionBudget", d.Name).(*policyv1.PodDisruptionBudget)
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				require.NoError(t, err)
				require.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "PDB %s covers %s's pods", pdb.Name, d.Name)
			}

			if name == "production" {
				checkMonitoring(t, c, svcAPI, svcWorker)
			}
		})
	}
}

// checkPod: non-root, a read-only root filesystem, no privilege, resources,
// no service account token; every secret variable a reference to the
// existing Secret under its own name, the required ones there; every TLS
// file in a mounted Secret.
func checkPod(t *testing.T, name string, pod corev1.PodSpec) {
	t.Helper()
	require.NotNil(t, pod.SecurityContext, name)
	require.True(t, pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot, "%s: runAsNonRoot", name)
	require.True(t, pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser != 0, "%s: a non-root user", name)
	require.True(t, pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken, "%s: seckill calls no Kubernetes API", name)
	secretVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secretVolumes[v.Name] = true
		}
	}
	require.Len(t, pod.Containers, 1, name)
	ctr := pod.Containers[0]
	sc := ctr.SecurityContext
	require.NotNil(t, sc, name)
	require.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s: read-only root filesystem", name)
	require.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "%s: no privilege escalation", name)
	require.NotNil(t, sc.Capabilities, name)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "%s: no capabilities", name)
	require.False(t, ctr.Resources.Requests.Cpu().IsZero(), "%s: a CPU request", name)
	require.False(t, ctr.Resources.Requests.Memory().IsZero(), "%s: a memory request", name)
	require.False(t, ctr.Resources.Limits.Memory().IsZero(), "%s: a memory limit", name)

	var referenced []string
	for _, e := range ctr.Env {
		if isSecret(e.Name) {
			require.Empty(t, e.Value, "%s: %s is a secret: by reference only", name, e.Name)
			require.True(t, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil, "%s: %s comes from the existing Secret", name, e.Name)
			ref := e.ValueFrom.SecretKeyRef
			require.Equal(t, "seckill", ref.Name, "%s: %s from existingSecret", name, e.Name)
			require.Equal(t, e.Name, ref.Key, "%s: the Secret's key is the variable's name", name)
			if ref.Optional == nil || !*ref.Optional {
				referenced = append(referenced, e.Name)
			}
		}
		if strings.HasSuffix(e.Name, "_FILE") || strings.HasSuffix(e.Name, "_PATH") {
			require.True(t, slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
				return secretVolumes[m.Name] && m.ReadOnly && strings.HasPrefix(e.Value, m.MountPath+"/")
			}), "%s: %s=%s is in no mounted Secret", name, e.Name, e.Value)
		}
	}
	require.ElementsMatch(t, requiredSecrets[name], referenced, "%s: the required secrets, from the existing Secret", name)
	if name != "worker" {
		require.False(t, slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "SECKILL_DRAW_KEY" }), "%s: the draw key is the workers' alone", name)
	}
	require.NotEmpty(t, envValue(t, ctr, "TEMPORAL_ADDRESS"), name)
	require.True(t, slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }),
		"%s: a writable /tmp beside the read-only root", name)
}

// checkProbes: readiness on /readyz, liveness on /healthz, on a port the
// container declares.
func checkProbes(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctr := d.Spec.Template.Spec.Containers[0]
	for path, probe := range map[string]*corev1.Probe{"/readyz": ctr.ReadinessProbe, "/healthz": ctr.LivenessProbe} {
		require.NotNil(t, probe, "%s probes %s", d.Name, path)
		require.NotNil(t, probe.HTTPGet, "%s probes %s over HTTP", d.Name, path)
		require.Equal(t, path, probe.HTTPGet.Path, d.Name)
		require.True(t, slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == probe.HTTPGet.Port.StrVal }),
			"%s probes port %q, which it does not declare", d.Name, probe.HTTPGet.Port.StrVal)
	}
}

// checkMonitoring: the ServiceMonitor scrapes both Services on their
// ports, and the PrometheusRule holds exactly the groups of alerts.yml,
// the file promtool tests.
func checkMonitoring(t *testing.T, c chart, services ...*corev1.Service) {
	t.Helper()
	sm := c.get(t, "ServiceMonitor", "seckill").(*monitoringv1.ServiceMonitor)
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)
	for _, svc := range services {
		require.True(t, sel.Matches(labels.Set(svc.Labels)), "the ServiceMonitor selects Service %s", svc.Name)
		require.True(t, slices.ContainsFunc(sm.Spec.Endpoints, func(e monitoringv1.Endpoint) bool {
			return e.Port == svc.Spec.Ports[0].Name && e.Path == "/metrics"
		}), "the ServiceMonitor scrapes /metrics on Service %s's port %s", svc.Name, svc.Spec.Ports[0].Name)
	}

	rule := c.get(t, "PrometheusRule", "seckill").(*monitoringv1.PrometheusRule)
	raw, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	var alerts struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	require.NoError(t, yaml.UnmarshalStrict(raw, &alerts), "%s decodes into the PrometheusRule's groups", alertsFile)
	require.NotEmpty(t, alerts.Groups)
	require.Equal(t, alerts.Groups, rule.Spec.Groups, "the PrometheusRule is %s, as it is", alertsFile)
}

// envValue is a container's plain variable; the test fails without it.
func envValue(t *testing.T, ctr corev1.Container, name string) string {
	t.Helper()
	for _, e := range ctr.Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("container %s has no %s", ctr.Name, name)
	return ""
}

// The chart's own checks: `helm lint --strict` with both values files
// (`make chart` runs the same), and a clientCert without its Secret is
// refused with a message that says so.
func TestHelmChartLint(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "-f", "deploy/helm/values-production.yaml")

	out, err := helmCmd(t, "template", "seckill", chartDir, "--set", "redis.tls.enabled=true,redis.tls.clientCert=true").CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "redis.tls.clientCert needs redis.tls.secret")
}
