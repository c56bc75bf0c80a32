package app

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// environ is the process environment as the configuration reads it: each
// secret variable X may come from the file X_FILE names (Kubernetes and
// Docker mount secrets as files), and SECKILL_TEMPORAL_ADDR /
// SECKILL_TEMPORAL_NAMESPACE stand in for Temporal's own names.
type environ map[string]string

// temporalSecrets are Temporal's own secret variables, read by envconfig
// rather than by Config's tags.
var temporalSecrets = []string{"TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_KEY_DATA"}

// secretNames are the variables tagged secret in Config, and Temporal's.
func secretNames() []string {
	names := append([]string(nil), temporalSecrets...)
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("secret") == "true" {
			name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			names = append(names, name)
		}
	}
	return names
}

// readEnviron reads kv (os.Environ's "K=V" form) and resolves X_FILE for
// every secret X. Setting both is refused: which one was meant is a guess
// we will not make with a secret.
func readEnviron(kv []string) (environ, error) {
	e := environ{}
	for _, s := range kv {
		if k, v, ok := strings.Cut(s, "="); ok {
			e[k] = v
		}
	}
	var errs []error
	for _, name := range secretNames() {
		path, ok := e[name+"_FILE"]
		if !ok || path == "" {
			continue
		}
		if e[name] != "" {
			errs = append(errs, fmt.Errorf("both %s and %s_FILE are set: set one", name, name))
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s_FILE: %w", name, err))
			continue
		}
		// Editors and `echo` end files with a newline; a secret never does.
		e[name] = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	for alias, name := range map[string]string{"SECKILL_TEMPORAL_ADDR": "TEMPORAL_ADDRESS", "SECKILL_TEMPORAL_NAMESPACE": "TEMPORAL_NAMESPACE"} {
		if _, ok := e[name]; !ok && e[alias] != "" {
			e[name] = e[alias]
		}
	}
	return e, errors.Join(errs...)
}

// LookupEnv and Environ make environ envconfig's view of the environment.
func (e environ) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// Environ lists e as "K=V" pairs.
func (e environ) Environ() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

// temporalOptions are the Temporal client options of Temporal's own
// environment configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE:
// the SDK's envconfig, as the temporal CLI reads them), defaulting to the
// local dev server.
func temporalOptions(e environ) (client.Options, error) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{EnvLookup: e})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client configuration: %w", err)
	}
	if prof.Address == "" {
		prof.Address = "127.0.0.1:7233"
	}
	if prof.Namespace == "" {
		prof.Namespace = "default"
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client configuration: %w", err)
	}
	return opts, nil
}

// Temporal is the client options Temporal's environment configuration
// gives, or, for a Config built by hand (tests), TemporalAddr and
// TemporalNamespace in plaintext.
func (c *Config) Temporal() client.Options {
	if c.temporal.HostPort != "" {
		return c.temporal
	}
	return client.Options{HostPort: cmp.Or(c.TemporalAddr, "127.0.0.1:7233"), Namespace: cmp.Or(c.TemporalNamespace, "default")}
}
