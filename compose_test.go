package seckill_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/worker"
)

// composeFile is the part of docker-compose.yml the tests below check.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("docker-compose.yml")
	require.NoError(t, err)
	var compose composeFile
	require.NoError(t, yaml.Unmarshal(raw, &compose), "docker-compose.yml must parse (anchors and merges included)")
	return compose
}

// docker-compose.yml cannot run here (no Docker engine), so it is checked
// against the code instead: the services it needs exist, every SECKILL_*
// variable it sets is one the binary reads, the secrets are required, the
// API's port is published, Redis persists (AOF), the Temporal server
// registers every search attribute the workflows write, and the worker is
// health-checked on the address it serves.
func TestComposeMatchesTheCode(t *testing.T) {
	compose := readCompose(t)
	for _, s := range []string{"mysql", "redis", "temporal", "migrate", "api", "worker", "prometheus", "grafana"} {
		require.Contains(t, compose.Services, s)
	}

	src, err := os.ReadFile("internal/app/config.go")
	require.NoError(t, err)
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`env:"(SECKILL_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		known[m[1]] = true
	}
	for _, name := range []string{"migrate", "api", "worker"} {
		svc := compose.Services[name]
		require.Equal(t, []string{name}, svc.Command, "service %s runs `seckill %s`", name, name)
		for k, v := range svc.Environment {
			if strings.HasPrefix(k, "SECKILL_") {
				// assert, not require: every unknown name is listed at once.
				assert.True(t, known[k], "%s sets %s, which the binary does not read", name, k)
			}
			if strings.HasSuffix(k, "_SECRET") || strings.HasSuffix(k, "_TOKEN") {
				require.Contains(t, v, ":?", "%s: secret %s must be required (${VAR:?...}), never defaulted", name, k)
			}
		}
	}
	api := compose.Services["api"]
	require.Equal(t, ":8080", api.Environment["SECKILL_HTTP_ADDR"])
	require.Contains(t, api.Ports, "8080:8080")
	require.Equal(t, "redis:6379", api.Environment["SECKILL_REDIS_ADDR"])
	require.Equal(t, "temporal:7233", api.Environment["SECKILL_TEMPORAL_ADDR"])
	require.Contains(t, api.Environment["SECKILL_MYSQL_DSN"], "@tcp(mysql:3306)/")
	// The worker (and the API's eager-start worker) refuse an implicit
	// sandbox: the stack names its provider.
	for _, name := range []string{"api", "worker"} {
		require.Equal(t, "sandbox", compose.Services[name].Environment["SECKILL_PAYMENT_PROVIDER"], name)
	}

	// The outbox (reservation + pending start) must survive a Redis restart:
	// AOF on, fsync every second (docs/redis-persistence.md), data on a volume.
	redisSvc := compose.Services["redis"]
	redisCmd := strings.Join(redisSvc.Command, " ")
	require.Contains(t, redisCmd, "--appendonly yes")
	require.Contains(t, redisCmd, "--appendfsync everysec")
	require.Contains(t, redisSvc.Volumes, "redis-data:/data", "Redis's AOF lives on a named volume")
	require.Contains(t, compose.Volumes, "redis-data")
	temporalCmd := strings.Join(compose.Services["temporal"].Command, " ")
	for _, spec := range worker.SearchAttributeSpecs() {
		require.Contains(t, temporalCmd, "--search-attribute "+spec)
	}
	require.Contains(t, strings.Join(compose.Services["temporal"].Ports, " "), "8233:8233", "the Web UI is published")

	// The worker's HTTP address is its own: the API (which shares the
	// environment block) must not get it, and the worker is health-checked
	// on it.
	wrk := compose.Services["worker"]
	_, apiHasIt := api.Environment["SECKILL_WORKER_HTTP_ADDR"]
	require.False(t, apiHasIt, "SECKILL_WORKER_HTTP_ADDR belongs to the worker service only, not the shared environment")
	addr := wrk.Environment["SECKILL_WORKER_HTTP_ADDR"]
	require.NotEmpty(t, addr, "the worker serves /metrics and /healthz on SECKILL_WORKER_HTTP_ADDR")
	require.Contains(t, wrk.Healthcheck.Test, "http://127.0.0.1"+addrPort(t, addr)+"/healthz", "the worker is health-checked where it listens")
}

// listenPorts are the ports a compose service serves, from the settings
// that make it listen: SECKILL_HTTP_ADDR for the API,
// SECKILL_WORKER_HTTP_ADDR for the worker, the port flags of the Temporal
// dev server, and the images' own ports for Prometheus and Grafana.
func listenPorts(t *testing.T, name string, svc composeService) map[string]bool {
	t.Helper()
	ports := map[string]bool{}
	switch {
	case len(svc.Command) == 1 && svc.Command[0] == "api":
		ports[addrPort(t, svc.Environment["SECKILL_HTTP_ADDR"])[1:]] = true
	case len(svc.Command) == 1 && svc.Command[0] == "worker":
		if a := svc.Environment["SECKILL_WORKER_HTTP_ADDR"]; a != "" {
			ports[addrPort(t, a)[1:]] = true
		}
	case name == "temporal":
		for i, arg := range svc.Command[:len(svc.Command)-1] {
			if arg == "--port" || arg == "--ui-port" || arg == "--metrics-port" {
				ports[svc.Command[i+1]] = true
			}
		}
	case name == "prometheus":
		ports["9090"] = true
	case name == "grafana":
		ports["3000"] = true
	}
	return ports
}

// addrPort returns ":port" of a listen address such as ":8081".
func addrPort(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "listen address %q", addr)
	return ":" + port
}

// mountSource is the host path of a bind mount ("./x:/y:ro"), or "" for a
// named volume.
func mountSource(volume string) string {
	src, _, _ := strings.Cut(volume, ":")
	if strings.HasPrefix(src, "./") || strings.HasPrefix(src, "/") {
		return src
	}
	return ""
}

type promConfig struct {
	Global struct {
		ScrapeInterval string `yaml:"scrape_interval"`
	} `yaml:"global"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

type grafanaDatasources struct {
	Datasources []struct {
		UID      string `yaml:"uid"`
		Type     string `yaml:"type"`
		URL      string `yaml:"url"`
		JSONData struct {
			TimeInterval string `yaml:"timeInterval"`
		} `yaml:"jsonData"`
	} `yaml:"datasources"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), "%s must parse", path)
}

// Prometheus and Grafana in docker-compose.yml: loopback-only ports, health
// checks, read-only mounts of files that exist, a required admin password,
// and a Prometheus that scrapes every seckill process on the port it
// actually listens on.
func TestComposeMonitoring(t *testing.T) {
	compose := readCompose(t)
	prom, graf := compose.Services["prometheus"], compose.Services["grafana"]

	for name, svc := range map[string]composeService{"prometheus": prom, "grafana": graf} {
		require.NotEmpty(t, svc.Image, name)
		require.NotContains(t, svc.Image, ":latest", "%s: pin the image tag", name)
		require.Contains(t, svc.Image, ":", "%s: pin the image tag", name)
		for _, p := range svc.Ports {
			require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s: loopback only, it has no (or optional) authentication", name, p)
		}
		require.NotEmpty(t, svc.Healthcheck.Test, "%s has a healthcheck", name)
		for _, v := range svc.Volumes {
			src := mountSource(v)
			if src == "" {
				name, _, _ := strings.Cut(v, ":")
				require.Contains(t, compose.Volumes, name, "named volume %s is declared", name)
				continue
			}
			require.True(t, strings.HasSuffix(v, ":ro"), "%s: bind mount %s is read-only", name, v)
			_, err := os.Stat(src)
			require.NoError(t, err, "%s mounts %s, which is not in the repository", name, src)
		}
	}
	require.Contains(t, prom.Ports, "127.0.0.1:9090:9090")
	require.Contains(t, strings.Join(prom.Healthcheck.Test, " "), "/-/ready")
	require.Contains(t, graf.Ports, "127.0.0.1:3000:3000")
	require.Contains(t, strings.Join(graf.Healthcheck.Test, " "), "/api/health")
	require.Equal(t, "service_healthy", graf.DependsOn["prometheus"].Condition)
	require.Contains(t, graf.Environment["GF_SECURITY_ADMIN_PASSWORD"], ":?",
		"the Grafana admin password is required (${VAR:?...}), never defaulted: an admin reaches the compose network through data sources")
	require.NotEqual(t, "Admin", graf.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"])
	require.NotEqual(t, "Editor", graf.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"])

	// The Prometheus config is the one mounted into the container.
	require.Contains(t, prom.Volumes, "./deploy/prometheus:/etc/prometheus:ro")
	require.Contains(t, prom.Command, "--config.file=/etc/prometheus/prometheus.yml")
	var cfg promConfig
	readYAML(t, "deploy/prometheus/prometheus.yml", &cfg)
	require.Equal(t, "5s", cfg.Global.ScrapeInterval, "a sale lasts seconds")
	scraped := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		require.Contains(t, []string{"", "/metrics"}, sc.MetricsPath, "job %s: seckill and Temporal serve /metrics", sc.JobName)
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				require.NoError(t, err, "job %s: target %q is host:port", sc.JobName, target)
				svc, ok := compose.Services[host]
				require.True(t, ok, "job %s: target %s is not a compose service", sc.JobName, target)
				require.True(t, listenPorts(t, host, svc)[port],
					"job %s: %s serves nothing on port %s that the compose file sets up (its ports: %v)", sc.JobName, host, port, listenPorts(t, host, svc))
				scraped[host] = true
			}
		}
	}
	require.True(t, scraped["api"], "the API is scraped")
	require.True(t, scraped["worker"], "the worker is scraped")
	if strings.Contains(strings.Join(compose.Services["temporal"].Command, " "), "--metrics-port") {
		require.True(t, scraped["temporal"], "the Temporal server's metrics port is fixed, so scrape it")
	}

	// Grafana's data source is this Prometheus, sampled at its interval.
	var ds grafanaDatasources
	readYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	require.Len(t, ds.Datasources, 1)
	require.Equal(t, "prometheus", ds.Datasources[0].Type)
	require.Equal(t, "http://prometheus:9090", ds.Datasources[0].URL)
	require.Equal(t, cfg.Global.ScrapeInterval, ds.Datasources[0].JSONData.TimeInterval,
		"Grafana's $__rate_interval must follow the scrape interval")
	var provider struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "deploy/grafana/provisioning/dashboards/seckill.yml", &provider)
	require.Len(t, provider.Providers, 1)
	require.Equal(t, "file", provider.Providers[0].Type)
	require.Contains(t, graf.Volumes, "./deploy/grafana/dashboards:"+provider.Providers[0].Options.Path+":ro",
		"the dashboard provider reads the mounted dashboards directory")
}

// dashboardPanel is a Grafana panel or row (rows may nest their panels).
type dashboardPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *dashboardDS       `json:"datasource"`
	Targets    []dashboardTarget  `json:"targets"`
	Panels     []dashboardPanel   `json:"panels"`
	GridPos    map[string]float64 `json:"gridPos"`
}

type dashboardDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardTarget struct {
	Expr       string       `json:"expr"`
	Datasource *dashboardDS `json:"datasource"`
}

// The hand-written dashboard: it parses, keeps its uid (links and the home
// dashboard use it), has unique panel ids, uses the provisioned data
// source, and every seckill_* metric it queries is one the code registers
// (a renamed metric would otherwise leave an empty panel).
func TestComposeGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("deploy", "grafana", "dashboards", "seckill.json"))
	require.NoError(t, err)
	var dash struct {
		UID        string           `json:"uid"`
		Title      string           `json:"title"`
		Refresh    string           `json:"refresh"`
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string          `json:"name"`
				Datasource *dashboardDS    `json:"datasource"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "seckill.json must parse")
	require.Equal(t, "seckill", dash.UID)
	require.Equal(t, "5s", dash.Refresh)

	var ds grafanaDatasources
	readYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	require.Len(t, ds.Datasources, 1)
	uid := ds.Datasources[0].UID
	require.NotEmpty(t, uid, "the provisioned data source has a fixed uid for the dashboard to use")

	// Collectors are defined in metrics/ and, for the Redis pool, next to
	// the client they read (redis/instrument.go).
	registered := map[string]bool{}
	for _, file := range []string{"metrics/metrics.go", "redis/instrument.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`Name:\s*"(seckill_[a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
			registered[m[1]] = true
		}
	}
	require.NotEmpty(t, registered)

	metricName := regexp.MustCompile(`\bseckill_[a-z0-9_]+`)
	unknown := map[string]bool{}
	checkExpr := func(where, expr string) {
		for _, name := range metricName.FindAllString(expr, -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && !registered[name] {
					name = base
					break
				}
			}
			if !registered[name] && !unknown[name] {
				unknown[name] = true
				assert.Fail(t, "unregistered metric", "%s queries %s, which the code does not register", where, name)
			}
		}
	}
	for _, v := range dash.Templating.List {
		require.NotNil(t, v.Datasource, "variable %s names its data source", v.Name)
		require.Equal(t, uid, v.Datasource.UID, "variable %s", v.Name)
		checkExpr("variable "+v.Name, v.Definition+" "+string(v.Query))
	}
	var names []string
	for _, v := range dash.Templating.List {
		names = append(names, v.Name)
	}
	require.Contains(t, names, "session_id")

	ids := map[int]string{}
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			require.NotZero(t, p.ID, "panel %q has an id", p.Title)
			require.NotContains(t, ids, p.ID, "panel %q reuses the id of %q", p.Title, ids[p.ID])
			ids[p.ID] = p.Title
			require.NotEmpty(t, p.GridPos, "panel %q has a position", p.Title)
			if p.Type != "row" {
				require.NotNil(t, p.Datasource, "panel %q names its data source", p.Title)
			}
			if p.Datasource != nil {
				require.Equal(t, uid, p.Datasource.UID, "panel %q uses the provisioned data source", p.Title)
			}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q has an empty query", p.Title)
				if tg.Datasource != nil {
					require.Equal(t, uid, tg.Datasource.UID, "panel %q: query uses the provisioned data source", p.Title)
				}
				checkExpr("panel "+strconv.Quote(p.Title), tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	require.NotEmpty(t, ids)
}
