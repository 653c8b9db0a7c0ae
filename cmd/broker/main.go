// Command broker is the standalone auth broker daemon: the same server as
// `omp auth-broker serve`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/logx"
	"github.com/ompgo/omp/internal/sigctx"
)

// flags are the command line of the broker.
type flags struct {
	bind, keyFile       string
	logLevel, logFormat string
	demo                bool
}

func main() {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	var f flags
	fs.StringVar(&f.bind, "bind", broker.DefaultBind, "listen address, host:port or port")
	fs.StringVar(&f.keyFile, "vault-key-file", "", "vault key file (default <config-dir>/vault.key)")
	fs.BoolVar(&f.demo, "demo", false, "also serve the offline demo provider (model demo/demo-echo, no account needed)")
	fs.StringVar(&f.logLevel, "log-level", "", logx.LevelUsage)
	fs.StringVar(&f.logFormat, "log-format", "", logx.FormatUsage)
	version := fs.Bool("version", false, "print the version and exit")
	fs.Parse(os.Args[1:])
	if *version {
		fmt.Println(buildinfo.String())
		return
	}
	ctx, stop := sigctx.NotifyContext(context.Background())
	err := run(ctx, f, os.Environ(), os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run serves with the environment environ until ctx is done; the logs go
// to stderr.
func run(ctx context.Context, f flags, environ []string, stderr io.Writer) error {
	proc := config.ProcessEnv(environ)
	dirs, err := config.ResolveDirs(*proc)
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	env := config.LoadEnv(cwd, dirs, environ)
	for _, w := range env.Warnings() {
		fmt.Fprintln(stderr, w)
	}
	log, err := logx.New(f.logLevel, f.logFormat, env.Get, stderr)
	if err != nil {
		return err
	}
	cfg, err := broker.FromEnv(env, dirs, log)
	if err != nil {
		return err
	}
	cfg.Bind = f.bind
	cfg.Demo = f.demo
	if f.keyFile != "" {
		cfg.KeyPath, cfg.VaultKey = f.keyFile, ""
	}
	return broker.Serve(ctx, cfg)
}
