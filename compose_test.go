package seckill_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/worker"
)

// composeEnv is the environment docker-compose.yml is loaded with: the
// variables it requires, each with a value of its own so a test can tell
// where a setting came from. Nothing comes from the test's own environment.
var composeEnv = map[string]string{
	"SECKILL_PAYMENT_PROVIDER": "stripe",
	"SECKILL_JWT_SECRET":       "compose-test-jwt-secret",
	"SECKILL_WEBHOOK_SECRET":   "compose-test-webhook-secret",
	"SECKILL_ADMIN_TOKEN":      "compose-test-admin-token",
	"SECKILL_DRAW_KEY":         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
	"GRAFANA_ADMIN_PASSWORD":   "compose-test-grafana-password",
	"SECKILL_UI_USER":          "ops",
	"SECKILL_UI_PASSWORD_HASH": composeUIHash,
}

// The UIs' door's login in the tests: a password of the tests' own and its
// hash, as an operator makes it (`openssl passwd -6`).
const (
	composeUIPassword = "compose-test-ui-password"
	composeUIHash     = "$6$composetestsalt$pCOgxY.kIR.0RYv2bmA3HFN16s4YBgF..J5Zb9JZE57UZEptFbdEctr1lB/v2RP35rQ.lmVoGzSCSLenUOlSh/"
)

// loadCompose loads docker-compose.yml the way `docker compose` does, with
// compose-go (its loader): the Compose schema, interpolation of ${…} from
// env, anchors and merges, and the consistency checks (every service,
// volume and network referred to exists).
func loadCompose(env map[string]string) (*types.Project, error) {
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"},
		cli.WithWorkingDirectory("."), cli.WithEnv(list), cli.WithDiscardEnvFile)
	if err != nil {
		return nil, err
	}
	return cli.ProjectFromOptions(context.Background(), opts)
}

func readCompose(t *testing.T) *types.Project {
	t.Helper()
	project, err := loadCompose(composeEnv)
	require.NoError(t, err, "docker-compose.yml must load as docker compose loads it")
	return project
}

// env is a service's environment variable, "" when unset.
func env(svc types.ServiceConfig, key string) string {
	if v := svc.Environment[key]; v != nil {
		return *v
	}
	return ""
}

// published lists a service's published ports as "host_ip:published:target"
// ("published:target" without a host address).
func published(svc types.ServiceConfig) []string {
	var out []string
	for _, p := range svc.Ports {
		s := p.Published + ":" + strconv.Itoa(int(p.Target))
		if p.HostIP != "" {
			s = p.HostIP + ":" + s
		}
		out = append(out, s)
	}
	return out
}

// mounts lists a service's volumes as "source:target[:ro]", bind mounts with
// their source relative to the repository ("./deploy/…").
func mounts(t *testing.T, svc types.ServiceConfig) []string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	var out []string
	for _, v := range svc.Volumes {
		src := v.Source
		if v.Type == types.VolumeTypeBind {
			rel, err := filepath.Rel(wd, src)
			require.NoError(t, err)
			src = "./" + filepath.ToSlash(rel)
		}
		m := src + ":" + v.Target
		if v.ReadOnly {
			m += ":ro"
		}
		out = append(out, m)
	}
	return out
}

// Every variable the file requires (${VAR:?…}) stops the load when unset,
// as it stops `docker compose`: no secret ever falls back to a default.
func TestComposeRequiresItsSecrets(t *testing.T) {
	for name := range composeEnv {
		without := map[string]string{}
		for k, v := range composeEnv {
			if k != name {
				without[k] = v
			}
		}
		_, err := loadCompose(without)
		require.ErrorContains(t, err, name, "docker-compose.yml must refuse to load without %s", name)
	}
}

// docker-compose.yml cannot run here (no Docker engine), so it is loaded as
// Docker loads it and checked against the code instead: the services it
// needs exist, every SECKILL_* variable it sets is one the binary reads, the
// secrets come from required variables, the API's port is published, Redis
// persists (AOF), the Temporal server runs the project's deploy/temporal
// config on PostgreSQL and gets every search attribute the workflows write,
// and the worker is health-checked on the address it serves.
func TestComposeMatchesTheCode(t *testing.T) {
	compose := readCompose(t)
	for _, s := range []string{"mysql", "redis", "postgresql", "temporal-schema", "temporal", "temporal-setup", "temporal-ui",
		"migrate", "api", "worker", "prometheus", "grafana"} {
		require.Contains(t, compose.Services, s)
	}

	src, err := os.ReadFile("internal/app/config.go")
	require.NoError(t, err)
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`env:"(SECKILL_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		known[m[1]] = true
	}
	secrets := map[string]bool{}
	for _, v := range composeEnv {
		secrets[v] = true
	}
	for _, name := range []string{"migrate", "api", "worker"} {
		svc := compose.Services[name]
		require.Equal(t, types.ShellCommand{name}, svc.Command, "service %s runs `seckill %s`", name, name)
		for k, v := range svc.Environment {
			if strings.HasPrefix(k, "SECKILL_") {
				// assert, not require: every unknown name is listed at once.
				assert.True(t, known[k], "%s sets %s, which the binary does not read", name, k)
			}
			if strings.HasSuffix(k, "_SECRET") || strings.HasSuffix(k, "_TOKEN") || strings.HasSuffix(k, "_KEY") {
				require.True(t, v != nil && (secrets[*v] || *v == ""),
					"%s: secret %s must come from the environment (${VAR:?...}, or ${VAR:-} when optional), never a default", name, k)
			}
		}
	}
	api := compose.Services["api"]
	require.Equal(t, composeEnv["SECKILL_DRAW_KEY"], env(compose.Services["worker"], "SECKILL_DRAW_KEY"), "the worker seals draw seeds")
	require.NotContains(t, api.Environment, "SECKILL_DRAW_KEY", "the key of the draw seeds is the worker's alone")
	require.Equal(t, ":8080", env(api, "SECKILL_HTTP_ADDR"))
	require.Contains(t, published(api), "8080:8080")
	require.Equal(t, "redis:6379", env(api, "SECKILL_REDIS_ADDR"))
	require.Equal(t, "temporal:7233", env(api, "SECKILL_TEMPORAL_ADDR"))
	require.Contains(t, env(api, "SECKILL_MYSQL_DSN"), "@tcp(mysql:3306)/")
	// The worker (and the API's eager-start worker) refuse an implicit
	// sandbox: the stack takes its provider from the environment, required.
	for _, name := range []string{"api", "worker"} {
		require.Equal(t, composeEnv["SECKILL_PAYMENT_PROVIDER"], env(compose.Services[name], "SECKILL_PAYMENT_PROVIDER"), name)
		// Started only once the namespace has the search attributes: the
		// worker refuses to run without them.
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, compose.Services[name].DependsOn["temporal-setup"].Condition, name)
	}

	// The outbox (reservation + pending start) must survive a Redis restart:
	// AOF on, fsync every second (docs/redis-persistence.md), data on a volume.
	redisSvc := compose.Services["redis"]
	redisCmd := strings.Join(redisSvc.Command, " ")
	require.Contains(t, redisCmd, "--appendonly yes")
	require.Contains(t, redisCmd, "--appendfsync everysec")
	require.Contains(t, mounts(t, redisSvc), "redis-data:/data", "Redis's AOF lives on a named volume")
	require.Contains(t, compose.Volumes, "redis-data")

	// The worker's HTTP address is its own: the API (which shares the
	// environment block) must not get it, and the worker is health-checked
	// on it.
	wrk := compose.Services["worker"]
	_, apiHasIt := api.Environment["SECKILL_WORKER_HTTP_ADDR"]
	require.False(t, apiHasIt, "SECKILL_WORKER_HTTP_ADDR belongs to the worker service only, not the shared environment")
	addr := env(wrk, "SECKILL_WORKER_HTTP_ADDR")
	require.NotEmpty(t, addr, "the worker serves /metrics and /healthz on SECKILL_WORKER_HTTP_ADDR")
	// Both are health-checked by the binary itself (no shell or wget in
	// the image): /healthz of the API, else of the worker's address.
	for _, svc := range []types.ServiceConfig{api, wrk} {
		require.NotNil(t, svc.HealthCheck, svc.Name)
		require.Equal(t, types.HealthCheckTest{"CMD", "/seckill", "healthcheck"}, svc.HealthCheck.Test, svc.Name)
	}
}

// .env.example documents every variable docker-compose.yml reads (outside
// its comments), loads as Compose reads an .env file, and holds no secret:
// the secret ones are empty, to be made by the operator.
func TestComposeEnvExample(t *testing.T) {
	raw, err := os.ReadFile(".env.example")
	require.NoError(t, err)
	example, err := dotenv.UnmarshalWithLookup(string(raw), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	src, err := os.ReadFile("docker-compose.yml")
	require.NoError(t, err)
	read := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)`).FindAllStringSubmatch(line, -1) {
			read[m[1]] = true
		}
	}
	require.NotEmpty(t, read)
	for name := range read {
		assert.Contains(t, example, name, ".env.example does not document %s, which docker-compose.yml reads", name)
	}
	for name, v := range example {
		if regexp.MustCompile(`(SECRET|TOKEN|PASSWORD|_KEY|_HASH)$`).MatchString(name) {
			require.Empty(t, v, ".env.example: %s holds a value; secrets are the operator's own", name)
		}
	}
	require.Contains(t, []string{"sandbox", "http", "stripe"}, example["SECKILL_PAYMENT_PROVIDER"])
}

// The image (read as text: no Docker engine here) runs the binary on a
// distroless base as a numeric non-root user, health-checks it with
// `seckill healthcheck`, is stamped with its version (the -X names are
// internal/buildinfo's variables, as the Makefile's) and labelled with it;
// .dockerignore keeps secrets, keys, local binaries and reports out of the
// build context.
func TestDockerImage(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	var lines []string // instructions, continuation lines joined, comments dropped
	for _, l := range strings.Split(strings.ReplaceAll(string(raw), "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	last := 0 // the final stage's first instruction
	for i, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			last = i
		}
	}
	final := lines[last:]
	require.Regexp(t, `^FROM (gcr\.io/distroless/static[\w.-]*:nonroot|scratch)$`, final[0], "the final stage is distroless or scratch")
	find := func(prefix string) []string {
		var out []string
		for _, l := range final {
			if strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return out
	}
	users := find("USER ")
	require.Len(t, users, 1)
	m := regexp.MustCompile(`^USER (\d+):(\d+)$`).FindStringSubmatch(users[0])
	require.NotNil(t, m, "a numeric user, so runAsNonRoot can verify it: %s", users[0])
	require.NotEqual(t, "0", m[1], "not root")
	require.Equal(t, []string{`HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["/seckill", "healthcheck"]`}, find("HEALTHCHECK "))
	labels := strings.Join(find("LABEL "), " ")
	for _, l := range []string{`org.opencontainers.image.version="${VERSION}"`, `org.opencontainers.image.revision="${COMMIT}"`, `org.opencontainers.image.created="${BUILD_TIME}"`} {
		require.Contains(t, labels, l)
	}

	// The -X flags name the variables internal/buildinfo declares.
	src, err := os.ReadFile(filepath.Join("internal", "buildinfo", "buildinfo.go"))
	require.NoError(t, err)
	require.Contains(t, string(src), "var version, commit, buildTime string")
	const pkg = "github.com/seckill/seckill/internal/buildinfo"
	for _, v := range []string{"version=${VERSION}", "commit=${COMMIT}", "buildTime=${BUILD_TIME}"} {
		require.Contains(t, string(raw), "-X "+pkg+"."+v, "Dockerfile")
	}
	mk, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	require.Contains(t, string(mk), "BUILDINFO  := "+pkg)
	for _, v := range []string{"version=$(VERSION)", "commit=$(COMMIT)", "buildTime=$(BUILD_TIME)"} {
		require.Contains(t, string(mk), "-X $(BUILDINFO)."+v, "Makefile")
	}

	ignore, err := os.ReadFile(".dockerignore")
	require.NoError(t, err)
	var patterns []string
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{".env", ".stack", "**/*.pem", "**/*.key", "deploy/haproxy/tls", "bin", ".temporal", "bench-report*", "capacity-report*"} {
		require.Contains(t, patterns, p, ".dockerignore keeps %s out of the build context", p)
	}
}

// The Temporal part of docker-compose.yml is the durable server of
// scripts/temporal-server.sh: deploy/temporal mounted and used (server
// config, dynamic config, setup script, Web UI config), PostgreSQL for both
// stores, the schema set up before the server starts and the namespace with
// every search attribute after, 8 shards by default, the Web UI reachable
// only through the haproxy service (TestComposeUIsAreBehindAuthentication).
func TestComposeTemporal(t *testing.T) {
	compose := readCompose(t)
	const mount = "/etc/seckill-temporal"
	server, schema, setup, ui := compose.Services["temporal"], compose.Services["temporal-schema"],
		compose.Services["temporal-setup"], compose.Services["temporal-ui"]
	for name, svc := range map[string]types.ServiceConfig{"temporal": server, "temporal-schema": schema, "temporal-setup": setup, "temporal-ui": ui} {
		require.Contains(t, mounts(t, svc), "./deploy/temporal:"+mount+":ro", "%s mounts the project's Temporal config", name)
	}
	for name, svc := range map[string]types.ServiceConfig{"postgresql": compose.Services["postgresql"], "temporal": server, "temporal-schema": schema,
		"temporal-setup": setup, "temporal-ui": ui} {
		require.Contains(t, svc.Image, ":", "%s: pin the image tag", name)
		require.NotContains(t, svc.Image, ":latest", "%s: pin the image tag", name)
		for _, p := range svc.Ports {
			require.Equal(t, "127.0.0.1", p.HostIP, "%s publishes %d: loopback only, there is no authentication", name, p.Target)
		}
	}

	// The server loads deploy/temporal/temporal.yaml (--config DIR --env NAME
	// is DIR/NAME.yaml under --root) and the dynamic config next to it.
	args := strings.Join(server.Entrypoint, " ")
	require.Contains(t, args, "--root / --config "+strings.TrimPrefix(mount, "/")+" --env temporal")
	require.FileExists(t, filepath.Join("deploy", "temporal", "temporal.yaml"))
	dyn, ok := strings.CutPrefix(env(server, "TEMPORAL_DYNAMIC_CONFIG"), mount+"/")
	require.True(t, ok, "the dynamic config comes from the mount: %q", env(server, "TEMPORAL_DYNAMIC_CONFIG"))
	require.FileExists(t, filepath.Join("deploy", "temporal", dyn))
	require.Equal(t, "8", env(server, "TEMPORAL_SHARDS"), "8 history shards unless TEMPORAL_SHARDS says otherwise")
	require.Equal(t, "7233", env(server, "TEMPORAL_PORT"), "the app services reach the frontend on temporal:7233")
	require.Contains(t, published(server), "127.0.0.1:7233:7233")
	require.NotNil(t, server.HealthCheck)
	require.NotEmpty(t, server.HealthCheck.Test)

	// One PostgreSQL for both stores, the same settings for the schema job
	// and the server.
	for _, k := range []string{"TEMPORAL_PG_ADDR", "TEMPORAL_PG_USER", "TEMPORAL_PG_PASSWORD", "TEMPORAL_DB", "TEMPORAL_VISIBILITY_DB"} {
		require.NotEmpty(t, env(server, k), k)
		require.Equal(t, env(server, k), env(schema, k), "%s: the schema job sets up the databases the server uses", k)
	}
	pgHost, _, err := net.SplitHostPort(env(server, "TEMPORAL_PG_ADDR"))
	require.NoError(t, err)
	require.Contains(t, compose.Services, pgHost)
	require.Equal(t, env(server, "TEMPORAL_PG_USER"), env(compose.Services[pgHost], "POSTGRES_USER"))
	require.Equal(t, env(server, "TEMPORAL_PG_PASSWORD"), env(compose.Services[pgHost], "POSTGRES_PASSWORD"))
	require.Equal(t, types.ServiceConditionHealthy, schema.DependsOn[pgHost].Condition)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, server.DependsOn["temporal-schema"].Condition,
		"the server starts on set-up databases")

	// Both jobs run deploy/temporal/setup.sh from the mount.
	require.FileExists(t, filepath.Join("deploy", "temporal", "setup.sh"))
	require.Equal(t, []string{"sh", mount + "/setup.sh"}, []string(schema.Entrypoint[:2]))
	require.Equal(t, types.ShellCommand{"schema"}, schema.Command)
	require.Equal(t, types.ShellCommand{"sh", mount + "/setup.sh", "namespace"}, setup.Entrypoint)
	require.Equal(t, types.ShellCommand(worker.SearchAttributeSpecs()), setup.Command,
		"temporal-setup registers exactly the search attributes the workflows write")
	require.Equal(t, "temporal:7233", env(setup, "TEMPORAL_ADDRESS"))

	// The Web UI runs deploy/temporal/ui.yaml against this server.
	require.Contains(t, strings.Join(ui.Entrypoint, " "), "--root / --config "+strings.TrimPrefix(mount, "/")+" --env ui")
	require.FileExists(t, filepath.Join("deploy", "temporal", "ui.yaml"))
	require.Equal(t, "temporal:7233", env(ui, "TEMPORAL_UI_ADDRESS"))
	require.Empty(t, published(ui), "the Web UI has no login of its own: no port on the host, the haproxy service is its door")
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, ui.DependsOn["temporal-setup"].Condition)
}

// listenPorts are the ports a compose service serves, from the settings
// that make it listen: SECKILL_HTTP_ADDR for the API,
// SECKILL_WORKER_HTTP_ADDR for the worker, the port variables of
// deploy/temporal/temporal.yaml for the Temporal server, TEMPORAL_UI_PORT
// for its Web UI, and the images' own ports for Prometheus and Grafana.
func listenPorts(t *testing.T, name string, svc types.ServiceConfig) map[string]bool {
	t.Helper()
	ports := map[string]bool{}
	switch {
	case slices.Equal(svc.Command, types.ShellCommand{"api"}):
		ports[addrPort(t, env(svc, "SECKILL_HTTP_ADDR"))[1:]] = true
	case slices.Equal(svc.Command, types.ShellCommand{"worker"}):
		if a := env(svc, "SECKILL_WORKER_HTTP_ADDR"); a != "" {
			ports[addrPort(t, a)[1:]] = true
		}
	case name == "temporal":
		for _, k := range []string{"TEMPORAL_PORT", "TEMPORAL_METRICS_PORT"} {
			if p := env(svc, k); p != "" {
				ports[p] = true
			}
		}
	case name == "temporal-ui":
		ports[env(svc, "TEMPORAL_UI_PORT")] = true
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

type promConfig struct {
	RuleFiles []string `yaml:"rule_files"`
	Global    struct {
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
		UID       string `yaml:"uid"`
		Type      string `yaml:"type"`
		IsDefault bool   `yaml:"isDefault"`
		URL       string `yaml:"url"`
		JSONData  struct {
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

// Prometheus and Grafana in docker-compose.yml: Prometheus on loopback only,
// Grafana on no port of the host (behind the haproxy service), health
// checks, read-only mounts of files that exist, a required admin password,
// no anonymous access nor sign-up, and a Prometheus that scrapes every
// seckill process on the port it actually listens on.
func TestComposeMonitoring(t *testing.T) {
	compose := readCompose(t)
	prom, graf := compose.Services["prometheus"], compose.Services["grafana"]

	for name, svc := range map[string]types.ServiceConfig{"prometheus": prom, "grafana": graf} {
		require.NotEmpty(t, svc.Image, name)
		require.NotContains(t, svc.Image, ":latest", "%s: pin the image tag", name)
		require.Contains(t, svc.Image, ":", "%s: pin the image tag", name)
		for _, p := range svc.Ports {
			require.Equal(t, "127.0.0.1", p.HostIP, "%s publishes %d: loopback only, it has no (or optional) authentication", name, p.Target)
		}
		require.NotNil(t, svc.HealthCheck, "%s has a healthcheck", name)
		require.NotEmpty(t, svc.HealthCheck.Test, "%s has a healthcheck", name)
		for _, v := range svc.Volumes {
			if v.Type != types.VolumeTypeBind {
				require.Contains(t, compose.Volumes, v.Source, "named volume %s is declared", v.Source)
				continue
			}
			require.True(t, v.ReadOnly, "%s: bind mount %s is read-only", name, v.Source)
			_, err := os.Stat(v.Source)
			require.NoError(t, err, "%s mounts %s, which is not in the repository", name, v.Source)
		}
	}
	require.Contains(t, published(prom), "127.0.0.1:9090:9090")
	require.Contains(t, strings.Join(prom.HealthCheck.Test, " "), "/-/ready")
	require.Empty(t, published(graf), "Grafana publishes no port of its own: the haproxy service is its door")
	require.Contains(t, strings.Join(graf.HealthCheck.Test, " "), "/api/health")
	require.Equal(t, types.ServiceConditionHealthy, graf.DependsOn["prometheus"].Condition)
	require.Equal(t, composeEnv["GRAFANA_ADMIN_PASSWORD"], env(graf, "GF_SECURITY_ADMIN_PASSWORD"),
		"the Grafana admin password is required (${VAR:?...}), never defaulted: an admin reaches the compose network through data sources")
	require.Equal(t, "false", env(graf, "GF_AUTH_ANONYMOUS_ENABLED"), "Grafana shows nothing without a login")
	require.Equal(t, "false", env(graf, "GF_USERS_ALLOW_SIGN_UP"), "nobody makes a Grafana account of their own")

	// The Prometheus config is the one mounted into the container, and so
	// are the rule files it names, the repository's (the chart's alerts.yml,
	// which promtool tests) at the same relative paths.
	inRepo := func(path string) string {
		for _, v := range prom.Volumes {
			if rest, ok := strings.CutPrefix(path, v.Target+"/"); ok && v.Type == types.VolumeTypeBind {
				wd, err := os.Getwd()
				require.NoError(t, err)
				rel, err := filepath.Rel(wd, filepath.Join(v.Source, rest))
				require.NoError(t, err)
				return rel
			}
		}
		t.Fatalf("prometheus: nothing mounted at %s", path)
		return ""
	}
	const config = "/etc/seckill/prometheus/prometheus.yml"
	require.Contains(t, prom.Command, "--config.file="+config)
	require.Equal(t, filepath.Join("deploy", "prometheus", "prometheus.yml"), inRepo(config))
	var cfg promConfig
	readYAML(t, "deploy/prometheus/prometheus.yml", &cfg)
	require.NotEmpty(t, cfg.RuleFiles, "Prometheus loads the alerting rules")
	for _, r := range cfg.RuleFiles {
		require.Equal(t, filepath.Join("deploy", "prometheus", r), inRepo(path.Join(path.Dir(config), r)), "rule file %s", r)
	}
	require.Contains(t, cfg.RuleFiles, "../helm/seckill/files/alerts.yml", "the alerts' one source")
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
	if env(compose.Services["temporal"], "TEMPORAL_METRICS_PORT") != "" {
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
	require.Contains(t, mounts(t, graf), "./deploy/grafana/dashboards:"+provider.Providers[0].Options.Path+":ro",
		"the dashboard provider reads the mounted dashboards directory")
	// The file is provisioned as it is imported elsewhere: its
	// ${datasource} variable takes the default data source, this one.
	require.True(t, ds.Datasources[0].IsDefault, "the dashboard's data source variable falls back to the default data source")
	require.Equal(t, provider.Providers[0].Options.Path+"/seckill.json", env(graf, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"),
		"the home dashboard is the provisioned file")
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
// dashboard use it), has unique panel ids, and every seckill_* metric it
// queries is one the code registers (a renamed metric would otherwise
// leave an empty panel). It imports into any Grafana: every panel, query,
// variable and annotation reads the ${datasource} variable (a Prometheus
// data source chosen at import through __inputs, the default one where
// Compose provisions the same file unchanged), and no data source uid is
// written anywhere else.
func TestComposeGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("deploy", "grafana", "dashboards", "seckill.json"))
	require.NoError(t, err)
	var dash struct {
		Inputs []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			PluginID string `json:"pluginId"`
		} `json:"__inputs"`
		Requires []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"__requires"`
		UID         string           `json:"uid"`
		Title       string           `json:"title"`
		Refresh     string           `json:"refresh"`
		Panels      []dashboardPanel `json:"panels"`
		Annotations struct {
			List []struct {
				Name       string       `json:"name"`
				BuiltIn    int          `json:"builtIn"`
				Datasource *dashboardDS `json:"datasource"`
				Expr       string       `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Templating struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Datasource *dashboardDS    `json:"datasource"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
				Current    struct {
					Value string `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "seckill.json must parse")
	require.Equal(t, "seckill", dash.UID)
	require.Equal(t, "5s", dash.Refresh)

	// Importable: one Prometheus input, the plugins it needs, and the
	// variable every query reads, set to the input at import.
	const uid = "${datasource}"
	require.Len(t, dash.Inputs, 1)
	require.Equal(t, "DS_PROMETHEUS", dash.Inputs[0].Name)
	require.Equal(t, "datasource", dash.Inputs[0].Type)
	require.Equal(t, "prometheus", dash.Inputs[0].PluginID)
	requires := map[string]bool{}
	for _, r := range dash.Requires {
		requires[r.Type+"/"+r.ID] = true
	}
	require.True(t, requires["grafana/grafana"] && requires["datasource/prometheus"], "__requires names Grafana and the Prometheus plugin: %v", requires)
	require.NotEmpty(t, dash.Templating.List)
	dsVar := dash.Templating.List[0]
	require.Equal(t, "datasource", dsVar.Name, "the data source variable comes first: the others query through it")
	require.Equal(t, "datasource", dsVar.Type)
	require.JSONEq(t, `"prometheus"`, string(dsVar.Query))
	require.Equal(t, "${DS_PROMETHEUS}", dsVar.Current.Value, "the import's choice")
	// No uid but the variable's, the dashboard's own and Grafana's built-in
	// annotations: a fixed data source uid would tie the file to one Grafana.
	for _, m := range regexp.MustCompile(`"uid":\s*"([^"]*)"`).FindAllStringSubmatch(string(raw), -1) {
		if m[1] != uid && m[1] != dash.UID && m[1] != "-- Grafana --" {
			assert.Fail(t, "fixed data source uid", "seckill.json names the uid %q: use %s", m[1], uid)
		}
	}
	// The session controls are marked on every panel, from the metric the
	// API counts them in.
	var controls bool
	for _, a := range dash.Annotations.List {
		if a.BuiltIn == 1 {
			continue
		}
		require.NotNil(t, a.Datasource, "annotation %s names its data source", a.Name)
		require.Equal(t, uid, a.Datasource.UID, "annotation %s", a.Name)
		controls = controls || strings.Contains(a.Expr, "seckill_session_changes_total")
	}
	require.True(t, controls, "an annotation marks the session controls (pause, resume, add stock, end)")

	registered := registeredMetrics(t)

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
	for _, v := range dash.Templating.List[1:] {
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
				require.Equal(t, uid, p.Datasource.UID, "panel %q reads the data source variable", p.Title)
			}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q has an empty query", p.Title)
				if tg.Datasource != nil {
					require.Equal(t, uid, tg.Datasource.UID, "panel %q: query reads the data source variable", p.Title)
				}
				checkExpr("panel "+strconv.Quote(p.Title), tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	require.NotEmpty(t, ids)
	for _, a := range dash.Annotations.List {
		checkExpr("annotation "+a.Name, a.Expr)
	}
}

// The operators' UIs are not open doors (docs/OPERATIONS.md, "Exposing the
// stack"): the Temporal Web UI and Grafana publish no port of their own; the
// haproxy service publishes theirs and runs deploy/haproxy/ui.cfg with the
// ops login's hash from a required variable, each frontend sent to the UI
// it names; nothing but the API and that door is published beyond
// loopback; and the Temporal UI's OIDC switch moves the UI and its door
// together.
func TestComposeUIsAreBehindAuthentication(t *testing.T) {
	compose := readCompose(t)
	for _, name := range []string{"temporal-ui", "grafana"} {
		require.Empty(t, published(compose.Services[name]), "%s publishes a port of its own: it is reached only through the haproxy service", name)
	}
	public := map[string]bool{"api 8080:8080": true, "haproxy 8233:8233": true, "haproxy 3000:3000": true}
	for name, svc := range compose.Services {
		for _, p := range svc.Ports {
			if p.HostIP == "127.0.0.1" {
				continue
			}
			port := p.Published + ":" + strconv.Itoa(int(p.Target))
			require.True(t, public[name+" "+port],
				"%s publishes %s on every interface: only the API and the UIs' door may (Prometheus, Temporal's frontend, MySQL, Redis: loopback at most)", name, port)
		}
	}

	door, ok := compose.Services["haproxy"]
	require.True(t, ok, "the haproxy service is the UIs' door")
	require.Contains(t, door.Image, ":", "haproxy: pin the image tag")
	require.NotContains(t, door.Image, ":latest", "haproxy: pin the image tag")
	require.Contains(t, mounts(t, door), "./deploy/haproxy:/usr/local/etc/haproxy:ro")
	require.Equal(t, types.ShellCommand{"haproxy", "-f", "/usr/local/etc/haproxy/ui.cfg"}, door.Command)
	require.Equal(t, composeUIHash, env(door, "SECKILL_UI_PASSWORD_HASH"), "the hash comes from the required SECKILL_UI_PASSWORD_HASH, as given")
	require.Equal(t, composeEnv["SECKILL_UI_USER"], env(door, "SECKILL_UI_USER"), "the login comes from the required SECKILL_UI_USER")
	targets := map[string]bool{}
	for _, p := range door.Ports {
		targets[strconv.Itoa(int(p.Target))] = true
	}
	ui := compose.Services["temporal-ui"]
	for bind, upstream := range map[string]string{
		"SECKILL_TEMPORAL_UI_BIND": "temporal-ui:" + env(ui, "TEMPORAL_UI_PORT"),
		"SECKILL_GRAFANA_BIND":     "grafana:3000",
	} {
		upstreamKey := strings.Replace(bind, "_BIND", "_UPSTREAM", 1)
		require.Equal(t, upstream, env(door, upstreamKey), "%s: the UI where it listens", upstreamKey)
		host, port, err := net.SplitHostPort(upstream)
		require.NoError(t, err)
		require.True(t, listenPorts(t, host, compose.Services[host])[port], "%s serves nothing on %s", host, port)
		require.True(t, targets[addrPort(t, env(door, bind))[1:]], "%s=%s: the door publishes that port", bind, env(door, bind))
	}

	// One switch for the Temporal UI's own OIDC login: the UI turns it on
	// and its door stops asking for the ops password, never one without
	// the other.
	require.Equal(t, "false", env(ui, "TEMPORAL_AUTH_ENABLED"))
	require.Equal(t, "false", env(door, "TEMPORAL_AUTH_ENABLED"))
	oidc := map[string]string{"TEMPORAL_AUTH_ENABLED": "true"}
	for k, v := range composeEnv {
		oidc[k] = v
	}
	withOIDC, err := loadCompose(oidc)
	require.NoError(t, err)
	require.Equal(t, "true", env(withOIDC.Services["temporal-ui"], "TEMPORAL_AUTH_ENABLED"))
	require.Equal(t, "true", env(withOIDC.Services["haproxy"], "TEMPORAL_AUTH_ENABLED"))

	// In an .env file the hash is single-quoted, as the header of
	// docker-compose.yml says: Compose would expand the "$" of an unquoted
	// value ("$6" and the rest as variables).
	quoted, err := dotenv.UnmarshalWithLookup("SECKILL_UI_PASSWORD_HASH='"+composeUIHash+"'\n", func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, composeUIHash, quoted["SECKILL_UI_PASSWORD_HASH"])
}

// haproxyLine is a line of an HAProxy config: its section ("frontend
// grafana"), its text without comments, and the .if conditions around it
// within its section (not those around the whole section).
type haproxyLine struct {
	section, text string
	conds         []string
}

// readHAProxy reads an HAProxy config's lines, with their sections and the
// conditions (.if/.else/.endif) they stand in.
func readHAProxy(t *testing.T, path string) []haproxyLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []haproxyLine
	var section string
	var conds []string
	outer := 0 // how many of conds enclose the section
	for _, line := range strings.Split(string(raw), "\n") {
		text := strings.TrimSpace(line)
		if i := strings.Index(text, "#"); i >= 0 && !strings.Contains(text[:i], `"`) {
			text = strings.TrimSpace(text[:i])
		}
		switch {
		case text == "":
		case strings.HasPrefix(text, ".if "):
			conds = append(conds, strings.TrimPrefix(text, ".if "))
		case text == ".else":
			conds[len(conds)-1] = "else of " + conds[len(conds)-1]
		case text == ".endif":
			conds = conds[:len(conds)-1]
		case strings.HasPrefix(text, "."):
		case line[0] != ' ' && line[0] != '\t':
			section, outer = text, len(conds)
		default:
			out = append(out, haproxyLine{section: section, text: text, conds: slices.Clone(conds[min(outer, len(conds)):])})
		}
	}
	require.Empty(t, conds, "%s: an .if without its .endif", path)
	return out
}

// deploy/haproxy/ui.cfg, read as text (HAProxy itself checks it below when
// installed): the login is a user with a hashed password from the
// environment, every frontend asks for it and keeps it from the UI behind,
// and the only condition under which a frontend does not ask is the
// Temporal UI's own OIDC login.
func TestHAProxyUIsAskForTheLogin(t *testing.T) {
	lines := readHAProxy(t, filepath.Join("deploy", "haproxy", "ui.cfg"))
	userlists := map[string]bool{}
	frontends := map[string][]haproxyLine{}
	for _, l := range lines {
		name, ok := strings.CutPrefix(l.section, "userlist ")
		if ok {
			require.Equal(t, `user "${SECKILL_UI_USER}" password "${SECKILL_UI_PASSWORD_HASH}"`, l.text,
				"userlist %s: the one ops login, its crypt(3) hash from the environment", name)
			userlists[name] = true
		}
		if name, ok := strings.CutPrefix(l.section, "frontend "); ok {
			frontends[name] = append(frontends[name], l)
		}
	}
	require.NotEmpty(t, userlists, "ui.cfg has a userlist")
	require.ElementsMatch(t, []string{"temporal_ui", "grafana"}, slices.Collect(maps.Keys(frontends)), "the UIs' frontends")
	auth := regexp.MustCompile(`^http-request auth(?: realm "[^"]+")? (?:unless \{ http_auth\((\w+)\) \}|if !\{ http_auth\((\w+)\) \})$`)
	for name, fl := range frontends {
		asks, hides := false, false
		for _, l := range fl {
			if m := auth.FindStringSubmatch(l.text); m != nil {
				require.True(t, userlists[m[1]+m[2]], "frontend %s checks userlist %s%s, which ui.cfg lacks", name, m[1], m[2])
				if len(l.conds) > 0 {
					require.True(t, name == "temporal_ui" && slices.Equal(l.conds, []string{`!streq("${TEMPORAL_AUTH_ENABLED}",true)`}),
						"frontend %s asks for the login only under %v", name, l.conds)
				}
				asks = true
			}
			if l.text == "http-request del-header Authorization" {
				hides = true
			}
		}
		require.True(t, asks, "frontend %s lets anyone in: no `http-request auth … http_auth(userlist)`", name)
		require.True(t, hides, "frontend %s passes the ops password on to the UI (http-request del-header Authorization)", name)
	}
	for _, cfg := range []string{"haproxy.cfg", "ui.cfg"} {
		for _, l := range readHAProxy(t, filepath.Join("deploy", "haproxy", cfg)) {
			require.NotContains(t, l.text, "insecure-password", "%s: a password in clear in the repository", cfg)
		}
	}
}

// Every rule of deploy/haproxy/ on a request's path, and the edge's
// example in docs/OPERATIONS.md, matches it in any case (-i): the shop's
// balancer keeps /admin/ and /metrics to the company's addresses, and
// /Admin/ must not get past it (the API would answer 404 anyway: its
// routes are case-sensitive, api.TestRoutesAreCaseSensitiveAndStrict).
func TestHAProxyPathRulesIgnoreCase(t *testing.T) {
	pathFetch := regexp.MustCompile(`\b(?:path|url|base)(?:_[a-z]+)?\b`)
	check := func(where, rule string) {
		t.Helper()
		if m := pathFetch.FindString(rule); m != "" {
			require.Regexp(t, `\b`+m+` -i `, rule, "%s: %q matches the path case-sensitively", where, rule)
		}
	}
	var shopDenies []string
	for _, cfg := range []string{"haproxy.cfg", "ui.cfg"} {
		for _, l := range readHAProxy(t, filepath.Join("deploy", "haproxy", cfg)) {
			check(cfg, l.text)
			if cfg == "haproxy.cfg" && l.section == "frontend shop" && strings.HasPrefix(l.text, "http-request deny") {
				shopDenies = append(shopDenies, l.text)
			}
		}
	}
	require.Contains(t, shopDenies, "http-request deny deny_status 404 if { path_beg -i /metrics /admin/ } !company",
		"the shop's balancer keeps the admin API and the metrics to the company")
	ops, err := os.ReadFile(filepath.Join("docs", "OPERATIONS.md"))
	require.NoError(t, err)
	rules := regexp.MustCompile(`(?m)^http-request .*$`).FindAllString(string(ops), -1)
	require.NotEmpty(t, rules, "docs/OPERATIONS.md shows the edge's rule")
	for _, r := range rules {
		check("docs/OPERATIONS.md", r)
	}
}

// haproxyBin is the machine's HAProxy, or a skip that says why.
func haproxyBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed, so deploy/haproxy/*.cfg were only read as text (scripts/deps.sh test installs it)")
	}
	return bin
}

// haproxyCheck runs `haproxy -c` on a config with exactly the given
// environment.
func haproxyCheck(t *testing.T, cfg string, env map[string]string) (string, error) {
	t.Helper()
	cmd := exec.Command(haproxyBin(t), "-c", "-f", cfg)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// doorEnv is the environment docker-compose.yml gives the haproxy service.
func doorEnv(t *testing.T) map[string]string {
	t.Helper()
	door := readCompose(t).Services["haproxy"]
	env := map[string]string{}
	for k, v := range door.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// selfSignedPEM writes a certificate and its key, as HAProxy's `ssl crt`
// reads them, to a file of the test's own.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ops.example.com"},
		DNSNames: []string{"ops.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ui.pem")
	pemBytes := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	require.NoError(t, os.WriteFile(path, pemBytes, 0o600))
	return path
}

// HAProxy itself accepts deploy/haproxy/*.cfg as `make stack`, the fleet
// test and docker-compose.yml run them: the shop's balancer; the UIs' door
// with compose's settings, over TLS, with the Temporal UI's OIDC switch,
// and without Grafana as `make stack` runs it; and it refuses the door
// without a login or a hash.
func TestHAProxyConfigsAreValid(t *testing.T) {
	haproxyBin(t)
	shop := filepath.Join("deploy", "haproxy", "haproxy.cfg")
	out, err := haproxyCheck(t, shop, map[string]string{"SECKILL_LB_ADDR": "127.0.0.1:8080", "SECKILL_LB_STATS": "127.0.0.1:8404",
		"SECKILL_API_1": "127.0.0.1:8081", "SECKILL_API_2": "127.0.0.1:8082"})
	require.NoError(t, err, "haproxy -c %s:\n%s", shop, out)

	door := filepath.Join("deploy", "haproxy", "ui.cfg")
	compose := doorEnv(t)
	with := func(changes map[string]string) map[string]string {
		env := maps.Clone(compose)
		for k, v := range changes {
			if v == "-" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		return env
	}
	for name, env := range map[string]map[string]string{
		"docker-compose.yml": compose,
		"TLS":                with(map[string]string{"SECKILL_UI_TLS_CERT": selfSignedPEM(t)}),
		"Temporal UI's OIDC": with(map[string]string{"TEMPORAL_AUTH_ENABLED": "true"}),
		"make stack": {"SECKILL_UI_USER": "ops", "SECKILL_UI_PASSWORD_HASH": composeUIHash,
			"SECKILL_TEMPORAL_UI_BIND": "127.0.0.1:8405", "SECKILL_TEMPORAL_UI_UPSTREAM": "127.0.0.1:8933"},
	} {
		out, err := haproxyCheck(t, door, env)
		require.NoError(t, err, "haproxy -c %s (%s):\n%s", door, name, out)
	}
	for name, env := range map[string]map[string]string{
		"no hash":  with(map[string]string{"SECKILL_UI_PASSWORD_HASH": "-"}),
		"no login": with(map[string]string{"SECKILL_UI_USER": ""}),
	} {
		out, err := haproxyCheck(t, door, env)
		require.Error(t, err, "haproxy accepts %s with %s:\n%s", door, name, out)
	}
}

// The door at work: HAProxy runs deploy/haproxy/ui.cfg in front of a
// stand-in UI. Without the login, or with a wrong one, it answers 401 and
// the UI sees nothing; with it, the UI answers and never sees the password.
// With the Temporal UI's OIDC switch, that UI's bearer tokens pass to it
// while Grafana still asks.
func TestHAProxyUIDoor(t *testing.T) {
	bin := haproxyBin(t)
	var seen []string // the Authorization headers the stand-in UI got
	var mu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, "the UI")
	}))
	t.Cleanup(upstream.Close)
	up := strings.TrimPrefix(upstream.URL, "http://")

	start := func(oidc bool) (temporalUI, grafana string) {
		t.Helper()
		temporalUI, grafana = testenv.FreeAddr(t), testenv.FreeAddr(t)
		cmd := exec.Command(bin, "-db", "-f", filepath.Join("deploy", "haproxy", "ui.cfg"))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SECKILL_UI_USER=ops", "SECKILL_UI_PASSWORD_HASH=" + composeUIHash,
			"SECKILL_TEMPORAL_UI_BIND=" + temporalUI, "SECKILL_TEMPORAL_UI_UPSTREAM=" + up,
			"SECKILL_GRAFANA_BIND=" + grafana, "SECKILL_GRAFANA_UPSTREAM=" + up}
		if oidc {
			cmd.Env = append(cmd.Env, "TEMPORAL_AUTH_ENABLED=true")
		}
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("haproxy:\n%s", log.String())
			}
		})
		for _, addr := range []string{temporalUI, grafana} {
			require.Eventually(t, func() bool {
				c, err := net.Dial("tcp", addr)
				if err == nil {
					c.Close()
				}
				return err == nil
			}, 10*time.Second, 20*time.Millisecond, "haproxy listens on %s", addr)
		}
		return temporalUI, grafana
	}
	get := func(addr, user, password, bearer string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/namespaces", nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic", "a 401 asks the browser for the login")
		}
		return resp.StatusCode
	}
	reached := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}

	temporalUI, grafana := start(false)
	for _, addr := range []string{temporalUI, grafana} {
		require.Equal(t, http.StatusUnauthorized, get(addr, "", "", ""), "%s without the login", addr)
		require.Equal(t, http.StatusUnauthorized, get(addr, "ops", "wrong", ""), "%s with a wrong password", addr)
		require.Equal(t, http.StatusUnauthorized, get(addr, "admin", composeUIPassword, ""), "%s with another user", addr)
		require.Equal(t, http.StatusUnauthorized, get(addr, "", "", "any-token"), "%s with a bearer token", addr)
		require.Empty(t, reached(), "a request without the login reached the UI")
	}
	for _, addr := range []string{temporalUI, grafana} {
		require.Equal(t, http.StatusOK, get(addr, "ops", composeUIPassword, ""), "%s with the login", addr)
	}
	require.Equal(t, []string{"", ""}, reached(), "the UIs must not see the ops password")

	temporalUI, grafana = start(true)
	require.Equal(t, http.StatusOK, get(temporalUI, "", "", "oidc-token"), "with its OIDC login the Temporal UI checks its own tokens")
	require.Contains(t, reached(), "Bearer oidc-token", "the UI's own token reaches it")
	require.Equal(t, http.StatusUnauthorized, get(grafana, "", "", "oidc-token"), "Grafana's door asks for the login whatever the Temporal UI does")
}
