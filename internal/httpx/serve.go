package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server timeouts (discrepancies.md B34).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 255 * time.Second // DEFAULT_SERVER_IDLE_TIMEOUT_S: SSE survives between keepalives
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultDrainGrace        = time.Second
)

// ServeOptions tune Serve; the zero value is the broker's configuration.
type ServeOptions struct {
	ReadHeaderTimeout time.Duration // default DefaultReadHeaderTimeout
	IdleTimeout       time.Duration // default DefaultIdleTimeout (255 s)
	// ShutdownTimeout bounds the graceful shutdown; connections still open
	// afterwards are closed. Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// DrainGrace is how long in-flight requests keep an uncancelled context
	// after shutdown starts; then their contexts are cancelled so streams and
	// long-polls end. Default DefaultDrainGrace.
	DrainGrace time.Duration
	// Logger receives net/http's own error lines; default slog.Default().
	Logger *slog.Logger
}

// Serve serves h on ln until ctx is cancelled, then shuts down: the listener
// closes at once, in-flight requests get DrainGrace to finish before their
// contexts are cancelled, and the whole shutdown is bounded by
// ShutdownTimeout. There is deliberately no WriteTimeout: streaming and
// long-poll handlers set per-write deadlines themselves. Serve returns nil
// after a shutdown caused by ctx (a shutdown that overran ShutdownTimeout is
// logged), or the server's error.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&opts.IdleTimeout, DefaultIdleTimeout)
	def(&opts.ShutdownTimeout, DefaultShutdownTimeout)
	def(&opts.DrainGrace, DefaultDrainGrace)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	// Request contexts derive from base, which outlives ctx by DrainGrace.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := time.AfterFunc(opts.DrainGrace, cancelBase)
	defer grace.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	if err != nil {
		log.Warn("http server shutdown did not finish in time; remaining connections closed", "error", err.Error())
	}
	return nil
}
