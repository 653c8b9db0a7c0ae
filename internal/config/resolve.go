package config

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultCommandTimeout bounds one !command resolution.
const DefaultCommandTimeout = 10 * time.Second

// maxCommandOutput bounds the stdout kept from a !command.
const maxCommandOutput = 1 << 20

// Resolver resolves config values: "!cmd" runs cmd through the shell and
// yields its trimmed stdout; any other value is the value of the
// environment variable named exactly by it, else of $NAME / ${NAME} (which
// the reference does not expand), else the literal itself.
//
// Successful command results are cached for the life of the Resolver (one
// per process); concurrent resolutions of the same command share one run;
// failures are not cached. A Resolver is safe for concurrent use.
type Resolver struct {
	// Env is the merged environment used for lookups and handed to commands.
	// Nil means an empty environment.
	Env *Env
	// Shell runs commands as Shell -c <cmd>. Default: $SHELL from Env, else /bin/sh.
	Shell string
	// Timeout bounds each command. Default DefaultCommandTimeout.
	Timeout time.Duration
	// Logger receives debug lines about failed commands (never their output)
	// and the warnings of ResolveBroker. Default slog.Default().
	Logger *slog.Logger

	group singleflight.Group
	mu    sync.Mutex
	cache map[string]string // guarded by mu: command value → trimmed stdout
}

// NewResolver returns a Resolver over env with default settings.
func NewResolver(env *Env) *Resolver { return &Resolver{Env: env} }

func (r *Resolver) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// Resolve returns the resolved value and whether it resolved to a non-empty
// string. An unresolved !command (non-zero exit, timeout, spawn error,
// empty output) and an empty value report false.
func (r *Resolver) Resolve(ctx context.Context, value string) (string, bool) {
	if strings.HasPrefix(value, "!") {
		return r.command(ctx, value)
	}
	if v := r.Env.Get(value); v != "" {
		return v, true
	}
	if name, ok := dollarName(value); ok {
		if v := r.Env.Get(name); v != "" {
			return v, true
		}
	}
	return value, value != ""
}

// dollarName extracts NAME from "$NAME" or "${NAME}" when NAME is a valid
// shell identifier.
func dollarName(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, "$")
	if !ok {
		return "", false
	}
	if inner, ok := strings.CutPrefix(rest, "{"); ok {
		rest, ok = strings.CutSuffix(inner, "}")
		if !ok {
			return "", false
		}
	}
	return rest, ValidEnvName(rest)
}

func (r *Resolver) command(ctx context.Context, value string) (string, bool) {
	r.mu.Lock()
	if v, ok := r.cache[value]; ok {
		r.mu.Unlock()
		return v, true
	}
	r.mu.Unlock()

	// The shared run is detached from any one caller's cancellation: another
	// caller may still be waiting for it. It has its own timeout.
	ch := r.group.DoChan(value, func() (any, error) {
		out, ok := r.run(context.WithoutCancel(ctx), value[1:])
		if ok {
			r.mu.Lock()
			if r.cache == nil {
				r.cache = map[string]string{}
			}
			r.cache[value] = out
			r.mu.Unlock()
		}
		return result{out, ok}, nil
	})
	select {
	case res := <-ch:
		v := res.Val.(result)
		return v.out, v.ok
	case <-ctx.Done():
		return "", false
	}
}

type result struct {
	out string
	ok  bool
}

func (r *Resolver) run(ctx context.Context, command string) (string, bool) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	shell := r.Shell
	if shell == "" {
		shell = r.Env.Get("SHELL")
	}
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", command)
	cmd.Env = r.Env.Environ()
	cmd.Stdin = nil
	var stdout bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: maxCommandOutput}
	cmd.Stderr = io.Discard
	// Kill the whole process group on timeout so helpers that fork cannot
	// outlive the budget, and stop waiting for pipes a grandchild holds open.
	setProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil || ctx.Err() != nil {
		// Never log the command's output: it is usually a secret.
		r.logger().Debug("config value command failed", "error", errText(ctx, err))
		return "", false
	}
	out := strings.TrimSpace(stdout.String())
	return out, out != ""
}

func errText(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return ctx.Err().Error()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// limitedWriter keeps the first n bytes and discards the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k]) //nolint:errcheck // bytes.Buffer never fails
		l.n -= k
	}
	return len(p), nil
}
