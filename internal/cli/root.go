package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// app carries what every command needs; tests build one with their own
// streams and environment.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	environ        []string
	cwd            string           // "" → os.Getwd
	clock          func() time.Time // nil → time.Now (tests pin it)

	once sync.Once
	env  *config.Env
	dirs config.Dirs
	err  error

	// stdin behind one buffer (in) and its line reader (lines), for login.
	inOnce    sync.Once
	inBuf     *bufio.Reader
	linesOnce sync.Once
	linesCh   <-chan string

	// Test hooks; nil in production.
	httpClient *http.Client                // login's token, follow-up and upload requests
	openURL    func(url string) error      // replaces the browser
	loginHook  func(o *oauth.LoginOptions) // adjusts the login options
}

// setup resolves the directories, from the process environment only, and
// the merged environment once; the keys a project .env may not set are
// reported on stderr.
func (a *app) setup() (*config.Env, config.Dirs, error) {
	a.once.Do(func() {
		proc := config.ProcessEnv(a.environ)
		a.dirs, a.err = config.ResolveDirs(*proc)
		if a.err != nil {
			return
		}
		cwd := a.cwd
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		a.env = config.LoadEnv(cwd, a.dirs, a.environ)
		for _, w := range a.env.Warnings() {
			fmt.Fprintln(a.stderr, w)
		}
	})
	return a.env, a.dirs, a.err
}

// warnLogger receives the client-side warnings (unreadable config.yml or
// token file) on the command's stderr.
func (a *app) warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newRootCmd(a *app) *cobra.Command {
	var flags agentFlags
	root := &cobra.Command{
		Use:           "omp [flags] [messages...]",
		Short:         "oh-my-pi: coding agent, auth broker client, broker and gateway",
		Version:       buildinfo.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.runAgent(cmd.Context(), &flags, args)
			if errors.Is(err, errNoPrompt) && len(args) == 0 && cmd.Flags().NFlag() == 0 {
				// A bare `omp` with nothing piped: there is no interactive
				// mode yet, so show the help.
				return cmd.Help()
			}
			return err
		},
	}
	addAgentFlags(root, &flags)
	root.AddCommand(newAuthBrokerCmd(a), newAuthGatewayCmd(a), newUsageCmd(a), newAgentLoginCmd(a))
	markUsageErrors(root)
	return root
}

// usageError is a command-line mistake (unknown flag, wrong arguments,
// unknown action). Like the reference CLI, it is printed with the command's
// usage line and exits 1; errors of the action itself print one line.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// markUsageErrors makes the flag and argument errors of c and its
// subcommands *usageError.
func markUsageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{cmd, err} })
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{cmd, err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markUsageErrors(sub)
	}
}
