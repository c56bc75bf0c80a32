package seckill_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/worker"
)

// docker-compose.yml cannot run here (no Docker engine), so it is checked
// against the code instead: the services it needs exist, every SECKILL_*
// variable it sets is one the binary reads, the secrets are required, the
// API's port is published, Redis persists (AOF), and the Temporal server
// registers every search attribute the workflows write.
func TestComposeMatchesTheCode(t *testing.T) {
	raw, err := os.ReadFile("docker-compose.yml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose), "docker-compose.yml must parse (anchors and merges included)")
	for _, s := range []string{"mysql", "redis", "temporal", "migrate", "api", "worker"} {
		require.Contains(t, compose.Services, s)
	}

	src, err := os.ReadFile("cmd/seckill/config.go")
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
				require.True(t, known[k], "%s sets %s, which the binary does not read", name, k)
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

	require.Contains(t, strings.Join(compose.Services["redis"].Command, " "), "--appendonly yes")
	temporalCmd := strings.Join(compose.Services["temporal"].Command, " ")
	for name, typ := range worker.SearchAttributes {
		kind := map[string]string{"INDEXED_VALUE_TYPE_KEYWORD": "Keyword", "INDEXED_VALUE_TYPE_INT": "Int"}[typ.String()]
		require.Contains(t, temporalCmd, "--search-attribute "+name+"="+kind)
	}
	require.Contains(t, strings.Join(compose.Services["temporal"].Ports, " "), "8233:8233", "the Web UI is published")
}
