package main

import (
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
)

// app carries what every command needs; tests build one with their own
// streams and environment.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	environ        []string
	cwd            string // "" → os.Getwd

	once sync.Once
	env  *config.Env
	dirs config.Dirs
	err  error
}

// setup resolves directories and the merged environment once.
func (a *app) setup() (*config.Env, config.Dirs, error) {
	a.once.Do(func() {
		proc := config.ProcessEnv(a.environ)
		dirs, err := config.ResolveDirs(*proc)
		if err != nil {
			a.err = err
			return
		}
		cwd := a.cwd
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		a.env = config.LoadEnv(cwd, dirs, a.environ)
		a.dirs, a.err = config.ResolveDirs(*a.env)
	})
	return a.env, a.dirs, a.err
}

func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "omp",
		Short:         "oh-my-pi: auth broker client and broker",
		Version:       buildinfo.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newAuthBrokerCmd(a))
	return root
}
