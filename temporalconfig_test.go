package seckill_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/testenv"
)

// renderedTemporal is the part of the durable server's config the test
// below checks, as `temporal-server render-config` prints it.
type renderedTemporal struct {
	Persistence struct {
		NumHistoryShards int    `yaml:"numHistoryShards"`
		DefaultStore     string `yaml:"defaultStore"`
		VisibilityStore  string `yaml:"visibilityStore"`
		DataStores       map[string]struct {
			SQL *struct {
				PluginName   string `yaml:"pluginName"`
				DatabaseName string `yaml:"databaseName"`
				ConnectAddr  string `yaml:"connectAddr"`
				User         string `yaml:"user"`
			} `yaml:"sql"`
		} `yaml:"datastores"`
	} `yaml:"persistence"`
	Global struct {
		Metrics struct {
			Prometheus struct {
				ListenAddress string `yaml:"listenAddress"`
			} `yaml:"prometheus"`
		} `yaml:"metrics"`
	} `yaml:"global"`
	Services map[string]struct {
		RPC struct {
			GRPCPort       int    `yaml:"grpcPort"`
			MembershipPort int    `yaml:"membershipPort"`
			BindOnIP       string `yaml:"bindOnIP"`
		} `yaml:"rpc"`
	} `yaml:"services"`
	DynamicConfigClient struct {
		Filepath string `yaml:"filepath"`
	} `yaml:"dynamicConfigClient"`
}

// deploy/temporal/temporal.yaml is a template the server renders from the
// environment: rendered by the pinned server itself (render-config), with
// no settings (scripts/temporal-server.sh) and with docker-compose.yml's,
// it is PostgreSQL for both stores (SQL visibility), 8 shards, the four
// services on the intended ports and addresses, and the dynamic config
// file that exists.
func TestTemporalConfigRenders(t *testing.T) {
	testenv.SkipShort(t, "bin/temporal-server (make temporal-bins)")
	bin := filepath.Join("bin", "temporal-server")
	_, err := os.Stat(bin)
	require.NoError(t, err, "bin/temporal-server is missing: build it with `make temporal-bins`")

	render := func(env []string) renderedTemporal {
		t.Helper()
		cmd := exec.Command(bin, "--config", filepath.Join("deploy", "temporal"), "--env", "temporal", "render-config")
		// Only the given settings: none of the test's own environment.
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "render-config: %s", stderr.String())
		var cfg renderedTemporal
		require.NoError(t, yaml.Unmarshal(out, &cfg))
		return cfg
	}
	check := func(cfg renderedTemporal, pg, bindIP string, port, metrics int) {
		t.Helper()
		require.Equal(t, 8, cfg.Persistence.NumHistoryShards)
		for _, store := range []string{cfg.Persistence.DefaultStore, cfg.Persistence.VisibilityStore} {
			ds, ok := cfg.Persistence.DataStores[store]
			require.True(t, ok, "store %s is defined", store)
			require.NotNil(t, ds.SQL, "store %s is SQL", store)
			require.Equal(t, "postgres12_pgx", ds.SQL.PluginName, "store %s: PostgreSQL 12+, which makes visibility advanced", store)
			require.Equal(t, pg, ds.SQL.ConnectAddr, store)
		}
		require.NotEqual(t, cfg.Persistence.DataStores[cfg.Persistence.DefaultStore].SQL.DatabaseName,
			cfg.Persistence.DataStores[cfg.Persistence.VisibilityStore].SQL.DatabaseName, "history and visibility have databases of their own")
		require.Len(t, cfg.Services, 4)
		require.Equal(t, port, cfg.Services["frontend"].RPC.GRPCPort)
		seen := map[int]string{}
		for name, svc := range cfg.Services {
			require.Equal(t, bindIP, svc.RPC.BindOnIP, name)
			for _, p := range []int{svc.RPC.GRPCPort, svc.RPC.MembershipPort} {
				require.NotContains(t, seen, p, "%s reuses the port of %s", name, seen[p])
				seen[p] = name
				// Temporal keeps membership ports in a PostgreSQL smallint.
				require.Less(t, p, 32768, name)
			}
		}
		require.Equal(t, bindIP+":"+strconv.Itoa(metrics), cfg.Global.Metrics.Prometheus.ListenAddress)
	}

	// scripts/temporal-server.sh: the defaults, away from the dev server's
	// ports (7233–7243, 6933–6939).
	local := render(nil)
	check(local, "127.0.0.1:5432", "127.0.0.1", 7933, 9000)
	require.Equal(t, "deploy/temporal/dynamicconfig.yaml", local.DynamicConfigClient.Filepath)
	require.FileExists(t, local.DynamicConfigClient.Filepath)

	// docker-compose.yml's temporal service, with its environment.
	compose := readCompose(t)
	var env []string
	for k, v := range compose.Services["temporal"].Environment {
		if v != nil {
			env = append(env, k+"="+*v)
		}
	}
	inCompose := render(env)
	check(inCompose, "postgresql:5432", "0.0.0.0", 7233, 8000)
	require.Equal(t, "/etc/seckill-temporal/dynamicconfig.yaml", inCompose.DynamicConfigClient.Filepath)
}
