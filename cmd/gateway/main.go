// Command gateway is the standalone auth gateway daemon: the same server as
// `omp auth-gateway serve`. It is a broker client (OMP_AUTH_BROKER_URL and
// OMP_AUTH_BROKER_TOKEN, or auth.broker.* in config.yml) and never links
// SQLite or the refresher.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/internal/logx"
	"github.com/ompgo/omp/internal/sigctx"
)

func main() {
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	var bind string
	fs.StringVar(&bind, "bind", gateway.DefaultBind, "listen address, host:port or port")
	fs.StringVar(&bind, "b", gateway.DefaultBind, "shorthand for --bind")
	noAuth := fs.Bool("no-auth", false, "disable the bearer check (loopback-only use)")
	optIn := fs.Bool(gateway.AllowNonLoopbackNoAuthFlag[2:], false, "allow --no-auth on a non-loopback bind")
	var limits gateway.Config
	fs.Func("allowed-host", "with --no-auth, also answer this Host name besides localhost and IP addresses (repeatable; default $"+gateway.EnvAllowedHosts+")", func(v string) error {
		limits.AllowedHosts = append(limits.AllowedHosts, v)
		return nil
	})
	fs.Func("allowed-origin", "with --no-auth, also answer browser requests from this origin (repeatable; default $"+gateway.EnvAllowedOrigins+")", func(v string) error {
		limits.AllowedOrigins = append(limits.AllowedOrigins, v)
		return nil
	})
	fs.Int64Var(&limits.MaxInFlightBytes, "max-inflight-bytes", 0, "cap on request body bytes held at once (0: $"+gateway.EnvMaxInFlightBytes+" or 256 MiB; negative: no cap)")
	noCache := fs.Bool(gateway.NoSnapshotCacheFlag[2:], false, gateway.NoSnapshotCacheUsage)
	logLevel := fs.String("log-level", "", logx.LevelUsage)
	logFormat := fs.String("log-format", "", logx.FormatUsage)
	version := fs.Bool("version", false, "print the version and exit")
	fs.Parse(os.Args[1:])
	if *version {
		fmt.Println(buildinfo.String())
		return
	}
	if err := run(bind, *noAuth, *optIn, *noCache, limits, *logLevel, *logFormat); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run serves with the flags until SIGINT or SIGTERM; limits holds the
// flags' allow-lists and cap, which replace the environment's when given;
// noCache turns the snapshot cache off.
// The startup and shutdown lines go to stdout, the logs to stderr.
func run(bind string, noAuth, optIn, noCache bool, limits gateway.Config, logLevel, logFormat string) error {
	ctx, stop := sigctx.NotifyContext(context.Background())
	defer stop()
	proc := config.ProcessEnv(os.Environ())
	dirs, err := config.ResolveDirs(*proc)
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	env := config.LoadEnv(cwd, dirs, os.Environ())
	for _, w := range env.Warnings() {
		fmt.Fprintln(os.Stderr, w)
	}
	logs, err := logx.Parse(logLevel, logFormat, env.Get)
	if err != nil {
		return err
	}
	log, warn, logw := logs.Buffered(os.Stderr)
	defer logw.Close()
	cfg, err := gateway.FromEnv(ctx, env, dirs, log, warn)
	if err != nil {
		return err
	}
	cfg.Bind, cfg.NoAuth, cfg.AllowNonLoopbackNoAuth = bind, noAuth, optIn
	cfg.OverrideLimits(limits.AllowedHosts, limits.AllowedOrigins, limits.MaxInFlightBytes)
	if noCache {
		cfg.SnapshotCache = nil
	}
	return gateway.Serve(ctx, cfg)
}
