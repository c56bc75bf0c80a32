package seckill_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// alertsFile is the alerting rules' one source: Prometheus's config and
// its tests read it, and the Helm chart renders it as a PrometheusRule.
var alertsFile = filepath.Join("deploy", "helm", "seckill", "files", "alerts.yml")

// registeredMetrics are the seckill_* series the code registers: the
// collectors in metrics/ and, for the Redis pool, next to the client they
// read (redis/instrument.go).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	registered := map[string]bool{}
	for _, file := range []string{"metrics/metrics.go", "redis/instrument.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`Name:\s*"(seckill_[a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
			registered[m[1]] = true
		}
	}
	require.NotEmpty(t, registered)
	return registered
}

// pinnedTool is bin/NAME, which `make test` builds from its pinned module
// (`make NAME`), else one on the PATH. Missing, the test fails (what it
// checks would go untested), except under -short, whose tests need nothing
// but Go.
func pinnedTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("bin", name))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath(name); err != nil {
			if testing.Short() {
				t.Skipf("needs %s (make %s): skipped under -short", name, name)
			}
			t.Fatalf("%s is missing: build it with `make %s` (make test does)", name, name)
		}
	}
	return bin
}

// promtool runs Prometheus's own rule checker in deploy/prometheus.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(pinnedTool(t, "promtool"), args...)
	cmd.Dir = filepath.Join("deploy", "prometheus")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
}

// The alerting rules load in Prometheus's configuration, each fires on the
// series that mean trouble and stays quiet on healthy ones
// (alerts_test.yml), every seckill_* series a rule reads is one the code
// registers, and every rule is tested and documented in the README.
func TestAlertRules(t *testing.T) {
	promtool(t, "check", "config", "prometheus.yml")
	promtool(t, "test", "rules", "alerts_test.yml")

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Expr   string            `yaml:"expr"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, alertsFile, &rules)
	tests, err := os.ReadFile(filepath.Join("deploy", "prometheus", "alerts_test.yml"))
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	registered := registeredMetrics(t)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			require.Contains(t, []string{"page", "ticket"}, r.Labels["severity"], "%s: severity", r.Alert)
			require.Contains(t, string(tests), "alertname: "+r.Alert+"\n", "%s has no promtool test", r.Alert)
			require.Contains(t, string(readme), "`"+r.Alert+"`", "%s is not in the README's alerts table", r.Alert)
			for _, name := range regexp.MustCompile(`\bseckill_[a-z0-9_]+`).FindAllString(r.Expr, -1) {
				require.True(t, registered[name], "%s reads %s, which the code does not register", r.Alert, name)
			}
		}
	}
	require.GreaterOrEqual(t, n, 10)
}

// The Prometheus `make stack` runs (scripts/stack.sh) loads: its
// configuration holds for Prometheus itself, loads the same tested rules
// as Compose's and scrapes the same jobs (the APIs, the workers, the
// Temporal server) from the target files the script writes in .stack/.
func TestStackPrometheusConfig(t *testing.T) {
	promtool(t, "check", "config", "stack.yml")
	type config struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			FileSDFiles []struct {
				Files []string `yaml:"files"`
			} `yaml:"file_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	var stack, compose config
	readYAML(t, "deploy/prometheus/stack.yml", &stack)
	readYAML(t, "deploy/prometheus/prometheus.yml", &compose)
	require.Equal(t, compose.RuleFiles, stack.RuleFiles, "the stack loads the tested alerting rules")
	script, err := os.ReadFile("scripts/stack.sh")
	require.NoError(t, err)
	var jobs, composeJobs []string
	for _, sc := range stack.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
		require.Len(t, sc.FileSDFiles, 1, "job %s", sc.JobName)
		for _, f := range sc.FileSDFiles[0].Files {
			written := strings.TrimPrefix(f, "../../")
			require.True(t, strings.HasPrefix(written, ".stack/prometheus/"), "job %s reads %s: the stack's files live in .stack", sc.JobName, f)
			require.Contains(t, string(script), `>"$dir/prometheus/`+strings.TrimPrefix(written, ".stack/prometheus/")+`"`,
				"scripts/stack.sh writes %s", written)
		}
	}
	for _, sc := range compose.ScrapeConfigs {
		composeJobs = append(composeJobs, sc.JobName)
	}
	require.ElementsMatch(t, composeJobs, jobs, "the stack scrapes what Compose scrapes")
	require.Contains(t, string(script), "--config.file=deploy/prometheus/stack.yml")
	require.Contains(t, string(script), "--enable-feature=exemplar-storage")
}
