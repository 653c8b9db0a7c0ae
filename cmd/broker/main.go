// Command broker is the standalone auth broker daemon: the same server as
// `omp auth-broker serve`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ompgo/omp/internal/brokerd"
	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
)

func main() {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	bind := fs.String("bind", brokerd.DefaultBind, "listen address, host:port or port")
	keyFile := fs.String("vault-key-file", "", "vault key file (default <config-dir>/vault.key)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Parse(os.Args[1:])
	if *version {
		fmt.Println(buildinfo.String())
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	if err := run(*bind, *keyFile, log); err != nil {
		log.Error("auth-broker failed", "error", err)
		os.Exit(1)
	}
}

func run(bind, keyFile string, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	cfg := brokerd.FromEnv(env, dirs, log)
	cfg.Bind = bind
	if keyFile != "" {
		cfg.KeyPath, cfg.VaultKey = keyFile, ""
	}
	return brokerd.Serve(ctx, cfg)
}
