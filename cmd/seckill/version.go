package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/buildinfo"
)

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build: version, commit, build time, Go version (as /healthz answers)",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			b := buildinfo.Read()
			fmt.Fprintf(cmd.OutOrStdout(), "version     %s\ncommit      %s\nbuild_time  %s\ngo_version  %s\n", b.Version, b.Commit, b.BuildTime, b.GoVersion)
		},
	}
}

// healthcheckCmd is Docker's HEALTHCHECK for the one image: it probes
// /healthz of the process in the same container, at the API's address or,
// where no API listens (a worker), the worker's ops address.
func healthcheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when this machine's seckill api or worker answers /healthz (Docker's HEALTHCHECK)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			var errs []error
			for _, addr := range []string{c.HTTPAddr, c.WorkerHTTPAddr} {
				if addr == "" {
					continue
				}
				err := probe(ctx, app.LocalURL(addr)+"/healthz")
				if err == nil {
					return nil
				}
				errs = append(errs, err)
			}
			return fmt.Errorf("unhealthy: %w", errors.Join(errs...))
		},
	}
}

// probe GETs url and wants a 200.
func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
