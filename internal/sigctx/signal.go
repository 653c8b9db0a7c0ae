// Package sigctx is the signal-cancelled context of the commands that serve.
package sigctx

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cancellation cause of a NotifyContext context.
type SignalError struct{ Signal os.Signal }

// Error returns the signal's conventional name, e.g. "SIGTERM".
func (e *SignalError) Error() string { return signalName(e.Signal) }

// Is makes a signal cancellation match context.Canceled.
func (e *SignalError) Is(target error) bool { return target == context.Canceled }

// NotifyContext is signal.NotifyContext for SIGINT and SIGTERM with a typed
// cause (*SignalError), so a server can name the signal, as the gateway's
// `Received SIGTERM, shutting down...` line on stdout does.
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			cancel(&SignalError{Signal: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
