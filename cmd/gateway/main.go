// Command gateway is the standalone auth gateway daemon: the same server as
// `omp auth-gateway serve`. It is a broker client (OMP_AUTH_BROKER_URL and
// OMP_AUTH_BROKER_TOKEN, or auth.broker.* in config.yml) and never links
// SQLite or the refresher.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gatewayd"
	"github.com/ompgo/omp/internal/logbuf"
	"github.com/ompgo/omp/internal/sigctx"
)

func main() {
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	var bind string
	fs.StringVar(&bind, "bind", gatewayd.DefaultBind, "listen address, host:port or port")
	fs.StringVar(&bind, "b", gatewayd.DefaultBind, "shorthand for --bind")
	noAuth := fs.Bool("no-auth", false, "disable the bearer check (loopback-only use)")
	optIn := fs.Bool(gatewayd.AllowNonLoopbackNoAuthFlag[2:], false, "allow --no-auth on a non-loopback bind")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Parse(os.Args[1:])
	if *version {
		fmt.Println(buildinfo.String())
		return
	}
	if err := run(bind, *noAuth, *optIn); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(bind string, noAuth, optIn bool) error {
	ctx, stop := sigctx.NotifyContext(context.Background())
	defer stop()
	proc := config.ProcessEnv(os.Environ())
	dirs, err := config.ResolveDirs(*proc)
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	env := config.LoadEnv(cwd, dirs, os.Environ())
	log, logw := logbuf.NewText(os.Stderr, slog.LevelInfo) // off the request path
	defer logw.Close()
	cfg, err := gatewayd.FromEnv(ctx, env, dirs, log, log)
	if err != nil {
		return err
	}
	cfg.Bind, cfg.NoAuth, cfg.AllowNonLoopbackNoAuth = bind, noAuth, optIn
	return gatewayd.Serve(ctx, cfg)
}
