// Command omp is the oh-my-pi CLI: a thin client of the auth broker
// (`omp auth-broker …`), on the broker host the broker itself
// (`omp auth-broker serve`), and the auth gateway (`omp auth-gateway
// serve|token|status|check`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ompgo/omp/internal/gatewayd"
	"github.com/ompgo/omp/pkg/vault/remote"
)

func main() {
	// The cancellation cause names the signal (`omp auth-gateway serve`
	// prints it).
	ctx, stop := gatewayd.NotifyContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
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
		// An unusable account pool file: the exact fleet.md §10 text.
		fmt.Fprintln(stderr, pe.Msg)
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "error: %s\n\nUSAGE\n  %s\n\nRun `%s --help` for details.\n", ue.err, ue.cmd.UseLine(), ue.cmd.CommandPath())
		return 1
	case errors.As(err, &ex):
		if ex.msg != "" {
			fmt.Fprintln(stderr, ex.msg)
		}
		return ex.code
	default:
		fmt.Fprintln(stderr, "error:", err)
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
