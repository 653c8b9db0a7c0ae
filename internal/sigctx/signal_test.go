package sigctx_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/sigctx"
)

func TestNotifyContextNamesTheSignal(t *testing.T) {
	ctx, stop := sigctx.NotifyContext(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	var se *sigctx.SignalError
	if !errors.As(context.Cause(ctx), &se) || se.Error() != "SIGTERM" || !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("cause %v, want *SignalError SIGTERM matching context.Canceled", context.Cause(ctx))
	}
}
