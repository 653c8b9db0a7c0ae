// Package cli is the oh-my-pi CLI, `omp`: the coding agent, a thin
// client of the auth broker (`omp auth-broker …`), on the broker host the
// broker itself (`omp auth-broker serve`), and the auth gateway (`omp
// auth-gateway serve|token|status|check`). cmd/omp runs it. Every command
// lives in this one binary, so package initialisation must stay cheap: the
// heavy parts (the SQLite vault, the servers, the terminal UI) do their
// work when a command first uses them, never at init.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/sigctx"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// Main runs the command line of the process and exits with its code.
func Main() {
	// The cancellation cause names the signal (`omp auth-gateway serve`
	// prints it).
	ctx, stop := sigctx.NotifyContext(context.Background())
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()}
	code := a.execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes the CLI and returns the process exit code. Errors print one
// line on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr, environ: environ}).execute(ctx, args)
}

// execute runs the command line args with a's streams and environment and
// returns the process exit code (run's body; tests call it with their own
// app, e.g. to pin the working directory).
func (a *app) execute(ctx context.Context, args []string) int {
	stderr := a.stderr
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ex *exitError
	var ue *usageError
	var pe *remote.PoolError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &pe):
		// An unusable account pool file: the reference's text, word for word.
		fmt.Fprintln(stderr, clitext.Safe(pe.Msg))
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "error: %s\n\nUSAGE\n  %s\n\nRun `%s --help` for details.\n", clitext.Safe(ue.err.Error()), ue.cmd.UseLine(), ue.cmd.CommandPath())
		return 1
	case errors.As(err, &ex):
		if ex.msg != "" {
			fmt.Fprintln(stderr, clitext.Safe(ex.msg))
		}
		return ex.code
	default:
		fmt.Fprintln(stderr, "error:", clitext.Safe(err.Error()))
		return 1
	}
}

// exitError ends the command with a specific exit code after its output was
// printed (e.g. a failed upload in `import` exits 1 without extra text).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }
