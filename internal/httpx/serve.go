package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server timeouts and limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 255 * time.Second // DEFAULT_SERVER_IDLE_TIMEOUT_S: SSE survives between keepalives
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultDrainGrace        = time.Second
	// DefaultMaxHeaderBytes bounds the request line and headers together
	// (net/http's own default is 1 MiB).
	DefaultMaxHeaderBytes = 64 << 10
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
	// MaxHeaderBytes bounds the request line and headers; a larger request
	// is answered 431. Default DefaultMaxHeaderBytes (64 KiB).
	MaxHeaderBytes int
	// BodyReadTimeout is how long a request body may go without sending a
	// byte; BodyTotalTimeout bounds reading the whole body. A body past
	// either fails with 408 and the connection is closed; the response
	// that follows a body has no read deadline. Defaults
	// DefaultBodyReadTimeout (30 s) and DefaultBodyTotalTimeout (2 min).
	BodyReadTimeout  time.Duration
	BodyTotalTimeout time.Duration
	// TrustedProxies are the peers whose X-Forwarded-For / X-Real-IP are
	// believed (logged as forwarded_for, see Peer). Default none.
	TrustedProxies TrustedProxies
	// Logger receives net/http's own error lines; default slog.Default().
	Logger *slog.Logger
}

// Serve serves h on ln until ctx is cancelled, then shuts down: the listener
// closes at once, in-flight requests get DrainGrace to finish before their
// contexts are cancelled, and the whole shutdown is bounded by
// ShutdownTimeout. There is deliberately no WriteTimeout: streaming and
// long-poll handlers set per-write deadlines themselves. Request bodies are
// bounded by BodyReadTimeout and BodyTotalTimeout instead of a global
// ReadTimeout, which would also cut long responses. Serve returns nil
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
	def(&opts.BodyReadTimeout, DefaultBodyReadTimeout)
	def(&opts.BodyTotalTimeout, DefaultBodyTotalTimeout)
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	// Request contexts derive from base, which outlives ctx by DrainGrace.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           Guard(h, opts),
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
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

// Guard wraps h with what Serve enforces per request: the body read
// bounds of opts (zero values mean none) and the forwarded client address
// from opts.TrustedProxies.
func Guard(h http.Handler, opts ServeOptions) http.Handler {
	return &guard{next: h, stall: opts.BodyReadTimeout, total: opts.BodyTotalTimeout, trusted: opts.TrustedProxies}
}

type guard struct {
	next         http.Handler
	stall, total time.Duration
	trusted      TrustedProxies
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.stall > 0 && g.total > 0 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if b := boundBody(w, r, g.stall, g.total); b != nil {
			r.Body = b
		}
	}
	if len(g.trusted) > 0 {
		r = g.trusted.withForwarded(r)
	}
	g.next.ServeHTTP(w, r)
}
