// Package gateway wires the auth gateway: a broker client (the remote
// credential store of pkg/vault/remote over a brokerclient.Client) and the
// gateway's HTTP core (pkg/proxy). cmd/gateway and `omp auth-gateway serve`
// are thin mains over Main; end-to-end tests run the same wiring on
// 127.0.0.1:0 next to a real broker.
//
// The gateway holds no refresh token and never links SQLite or the
// refresher (internal/deptest checks it).
//
// Readiness: Open boots the remote store (remote.Store.Boot) from the
// broker's initial GET /v1/snapshot, so a gateway that is listening holds
// the broker's credentials and Run only follows the stream. When the
// broker gives no answer (or a 5xx), a fresh snapshot cache for this
// broker URL and token (Config.SnapshotCache, on by default; the
// reference gateway has none) stands in: a gateway restarted while its
// broker is down still serves the cached credentials, and Run catches up
// with the broker once it answers. Without a fresh cache Open refuses to
// start. Run logs `auth-gateway snapshot loaded`.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/sigctx"
	"github.com/ompgo/omp/pkg/proxy"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// Defaults.
const (
	DefaultBind          = config.DefaultGatewayBind
	DefaultShutdownGrace = 30 * time.Second
	// SnapshotWarnAfter is how long Run waits for the remote store's first
	// snapshot before it logs a warning (requests keep waiting).
	SnapshotWarnAfter = 10 * time.Second
	// AllowNonLoopbackNoAuthFlag is the opt-in flag that lets --no-auth run
	// on a non-loopback bind; without it Open refuses such a run.
	AllowNonLoopbackNoAuthFlag = config.AllowNonLoopbackNoAuthFlag
	// NoSnapshotCacheFlag turns the gateway's snapshot cache off: it then
	// neither writes the cache nor starts without the broker.
	NoSnapshotCacheFlag  = "--no-snapshot-cache"
	NoSnapshotCacheUsage = "neither write nor use the encrypted snapshot cache: refuse to start while the broker is unreachable (also: OMP_AUTH_BROKER_SNAPSHOT_TTL_MS=0)"
)

// The reference's exact texts.
const (
	MsgNoBroker        = "`omp auth-gateway serve` requires OMP_AUTH_BROKER_URL (or `auth.broker.url`/`auth.broker.token` in config.yml). The gateway is itself a broker client."
	MsgNoSnapshot      = "Auth broker returned no initial snapshot"
	msgNoAuthListening = "auth: disabled (--no-auth) — any client can call this gateway"
)

// Config is everything the gateway needs, parsed in one place by the caller.
type Config struct {
	Bind      string // host:port or port; default DefaultBind
	TokenPath string // bearer token file (<config-dir>/auth-gateway.token); created when absent; required unless NoAuth
	// NoAuth disables the bearer check (loopback-only use).
	NoAuth bool
	// AllowNonLoopbackNoAuth is the operator's explicit opt-in
	// (AllowNonLoopbackNoAuthFlag) to run NoAuth on a non-loopback bind;
	// without it Open refuses.
	AllowNonLoopbackNoAuth bool
	BrokerURL              string // required: the gateway is a broker client
	BrokerToken            string // bearer for the broker; secret, never logged
	// URLs returns an upstream base URL override ("" = the provider
	// default); may be nil.
	URLs       func(provider, kind string) string
	Logger     *slog.Logger // default: text to stderr
	Out        io.Writer    // startup and shutdown lines, as the reference prints them; default os.Stdout
	Version    string       // default buildinfo.String()
	HTTPClient *http.Client // upstream provider calls; default a client without an overall timeout (streams)
	// BrokerHTTPClient talks to the broker; it must have no overall
	// timeout (the snapshot stream is long-lived). Default: a plain client.
	BrokerHTTPClient *http.Client
	// ShutdownGrace is how long running requests (streams) get to finish
	// once shutdown starts; then their contexts are cancelled. Default
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// SnapshotCache, when set, is the encrypted snapshot cache the gateway
	// writes after every full snapshot and boots from while it is fresh
	// and the broker cannot be reached (its Token and URL must be
	// BrokerToken and BrokerURL). nil: the broker must answer at start.
	// FromEnv sets it unless the snapshot TTL is 0; --no-snapshot-cache
	// clears it.
	SnapshotCache *remote.Cache
	// Policies are the account policies of config.yml
	// (auth.accountPolicies, retry.usageReservePct); nil: none.
	Policies *pick.Policies
	// Pool is the account pool (OMP_AUTH_BROKER_ACCOUNT_POOL_FILE): the OAuth accounts this gateway serves. Providers left
	// without credentials get no models. nil: every credential.
	Pool remote.Pool
	// InstallID and Hostname attribute the gateway's own observed usage
	// (requests without x-omp-install-id); an empty
	// InstallID turns observed-usage reporting off.
	InstallID, Hostname string
	// ObservedFlush is the observed-usage batching delay; default
	// remote.DefaultObservedFlush (10 s).
	ObservedFlush time.Duration
	// TrustedProxies lists the reverse proxies (CIDR prefixes or addresses,
	// comma separated; OMP_TRUSTED_PROXIES) whose X-Forwarded-For and
	// X-Real-IP are logged as forwarded_for. Default none: logs name only
	// the connection's peer.
	TrustedProxies string
	// BodyReadTimeout is how long a request body may go without sending a
	// byte (OMP_HTTP_BODY_READ_TIMEOUT), BodyTotalTimeout how long reading
	// it may take in all; past either the request fails with 408. Defaults
	// httpx.DefaultBodyReadTimeout (30 s) and httpx.DefaultBodyTotalTimeout
	// (2 min).
	BodyReadTimeout, BodyTotalTimeout time.Duration
	// AllowedHosts and AllowedOrigins widen what a NoAuth gateway answers
	// (proxy.Options): Host names besides localhost and IP addresses, and
	// browser origins besides its own. Ignored with a token.
	AllowedHosts, AllowedOrigins []string
	// MaxInFlightBytes caps the request body bytes held at once
	// (proxy.Options.MaxInFlightBytes): 0 is proxy.DefaultMaxInFlightBytes,
	// negative no cap.
	MaxInFlightBytes int64
}

// Main is a running gateway.
type Main struct {
	Config Config

	Broker   *brokerclient.Client
	Store    *remote.Store // the broker's credentials, followed live
	Proxy    *proxy.Server
	Reporter *remote.Reporter // observed usage to the broker; nil when off

	ln      net.Listener
	url     string
	trusted httpx.TrustedProxies
}

// URL is the base URL the gateway listens on (valid after Open).
func (m *Main) URL() string { return m.url }

// Open checks the configuration, binds the listener, checks that the
// broker answers an initial snapshot, resolves the bearer token (creating
// the file unless NoAuth), builds the store and the proxy and prints the
// startup lines. Nothing is served until Run.
func (m *Main) Open(ctx context.Context) (err error) {
	c := &m.Config
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.Version == "" {
		c.Version = buildinfo.String()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: upstreamTransport()}
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.BrokerURL == "" {
		return ErrNoBroker
	}
	if c.TokenPath == "" && !c.NoAuth {
		return errors.New("gateway: TokenPath is required unless NoAuth")
	}
	bind := c.Bind
	if bind == "" {
		bind = DefaultBind
	}
	host, port, err := config.ParseBind(bind)
	if err != nil {
		return err
	}
	if m.trusted, err = httpx.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("%s: %w", httpx.EnvTrustedProxies, err)
	}
	if c.NoAuth && !IsLoopback(host) && !c.AllowNonLoopbackNoAuth {
		return fmt.Errorf("refusing --no-auth on non-loopback bind %s: any client that can reach it could use every credential of the broker; bind 127.0.0.1, drop --no-auth, or add %s", bind, AllowNonLoopbackNoAuthFlag)
	}
	// Bind first: a busy port fails before the token file exists.
	if m.ln, err = config.Listen(bind, host, port); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.ln.Close()
			m.ln = nil
		}
	}()
	m.Broker = brokerclient.New(c.BrokerURL, c.BrokerToken, c.BrokerHTTPClient)
	m.Store = remote.New(remote.Options{Client: m.Broker, Logger: c.Logger, Cache: c.SnapshotCache, LiveFirst: true, Pool: c.Pool})
	fromCache, err := m.Store.Boot(ctx)
	if err != nil {
		c.Logger.Error("auth-gateway initial snapshot failed", "broker", c.BrokerURL, "error", err.Error())
		return &SnapshotError{Err: err}
	}
	if fromCache {
		c.Logger.Warn("auth-gateway started from the snapshot cache: the broker is unreachable; serving the cached credentials until it answers", "broker", c.BrokerURL)
	}
	var tokens []string
	if !c.NoAuth {
		token, created, err := config.EnsureToken(c.TokenPath)
		if err != nil {
			return fmt.Errorf("bearer token: %w", err)
		}
		config.SecureTokenFileLogged(c.Logger, "auth-gateway", c.TokenPath)
		for _, w := range config.CheckPerms(c.TokenPath) {
			c.Logger.Warn(w)
		}
		if created {
			c.Logger.Info("auth-gateway bearer token created", "path", c.TokenPath) // never the token
		}
		tokens = []string{token}
	}

	var observe func(proxy.Observed)
	if c.InstallID != "" {
		m.Reporter = &remote.Reporter{Client: m.Broker, Every: c.ObservedFlush, Logger: c.Logger}
		observe = func(o proxy.Observed) {
			inst, host := o.InstallID, o.Hostname
			if inst == "" {
				inst, host = c.InstallID, c.Hostname
			}
			m.Reporter.Record(remote.Observation{InstallID: inst, Hostname: host, App: o.App,
				Provider: o.Provider, Model: o.Model, CredentialID: o.CredentialID,
				InputTokens: o.Usage.Input, OutputTokens: o.Usage.Output,
				CacheReadTokens: o.Usage.CacheRead, CacheWriteTokens: o.Usage.CacheWrite, CostUsd: o.Usage.Cost.Total})
		}
	}
	m.Proxy, err = proxy.New(proxy.Options{
		Observe:    observe,
		Source:     m.Store,
		Policies:   c.Policies,
		Tokens:     tokens,
		NoAuth:     c.NoAuth,
		Logger:     c.Logger,
		Version:    c.Version,
		URLs:       c.URLs,
		HTTPClient: c.HTTPClient,
		Status:     func() any { return syncStatus(m.Store.Status()) },
		Sync: func() proxy.SyncState {
			st := m.Store.Status()
			return proxy.SyncState{Mode: st.Mode, LastSync: st.LastSync}
		},
		History: func(ctx context.Context, q url.Values) (proxy.HistoryPage, error) {
			h, err := m.Broker.UsageHistoryQuery(ctx, q)
			return proxy.HistoryPage{GeneratedAt: h.GeneratedAt, Entries: h.Entries, Truncated: h.Truncated}, err
		},
		AllowedHosts:     c.AllowedHosts,
		AllowedOrigins:   c.AllowedOrigins,
		MaxInFlightBytes: c.MaxInFlightBytes,
	})
	if err != nil {
		return err
	}

	_, actual, _ := net.SplitHostPort(m.ln.Addr().String())
	m.url = "http://" + hostForURL(host) + ":" + actual
	fmt.Fprintf(c.Out, "auth-gateway listening on %s\n", m.url)
	if c.NoAuth {
		fmt.Fprintln(c.Out, msgNoAuthListening)
	} else {
		fmt.Fprintf(c.Out, "bearer token: %s (chmod 0600)\n", c.TokenPath)
	}
	fmt.Fprintf(c.Out, "upstream broker: %s\n", c.BrokerURL)
	return nil
}

// Run serves until ctx is cancelled, then shuts down gracefully: the
// listener closes at once, running requests get ShutdownGrace to finish,
// and the remote store keeps following the broker until the server is
// done (a draining stream may still need a refresh).
func (m *Main) Run(ctx context.Context) error {
	c := &m.Config
	g, gctx := errgroup.WithContext(ctx)
	storeCtx, stopStore := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStore()
	g.Go(func() error { return m.Store.Run(storeCtx) })
	g.Go(func() error { m.watchReady(storeCtx); return nil })
	g.Go(func() error {
		defer stopStore()
		return httpx.Serve(gctx, m.ln, m.Proxy.Handler(), httpx.ServeOptions{
			Logger:           c.Logger,
			IdleTimeout:      httpx.DefaultIdleTimeout, // 255 s: long thinking calls survive
			DrainGrace:       c.ShutdownGrace,
			ShutdownTimeout:  c.ShutdownGrace + time.Second,
			TrustedProxies:   m.trusted,
			BodyReadTimeout:  c.BodyReadTimeout,
			BodyTotalTimeout: c.BodyTotalTimeout,
		})
	})
	err := g.Wait()
	if m.Reporter != nil {
		// The final batch: bounded, the broker may be gone.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		m.Reporter.Close(fctx)
		cancel()
	}
	m.Store.WaitPosts()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// UpstreamIdlePerHost is how many idle keep-alive connections the default
// upstream client keeps per provider host. net/http's default (2) makes a
// gateway serving more than two concurrent requests to one provider open
// and close a connection (a TLS handshake, in production) per request.
const UpstreamIdlePerHost = 64

// upstreamWriteBuffer is the per-connection write buffer of the upstream
// client: it holds request headers (about 1 KiB with OAuth betas) and
// small bodies; large bodies bypass it. Each open stream holds its
// connection, so the 4 KiB default cost 2 KiB per stream for nothing.
const upstreamWriteBuffer = 2 << 10

// upstreamReadBuffer is the per-connection read buffer of the upstream
// client (HTTP/1). It holds response header lines and SSE chunks in
// passing; the SSE reader above it keeps its own buffer and reads larger
// events straight through. An open stream holds its connection, and the
// 4 KiB default would hold 3 KiB more per open stream for no fewer reads
// on provider streams, whose events are flushed one by one and rarely
// exceed 1 KiB.
const upstreamReadBuffer = 1 << 10

// upstreamTransport is http.DefaultTransport's configuration with
// UpstreamIdlePerHost idle connections per host.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ReadBufferSize = upstreamReadBuffer
	t.WriteBufferSize = upstreamWriteBuffer
	t.MaxIdleConnsPerHost = UpstreamIdlePerHost
	if t.MaxIdleConns < 4*UpstreamIdlePerHost {
		t.MaxIdleConns = 4 * UpstreamIdlePerHost
	}
	return t
}

// watchReady logs the store's first snapshot, or warns while it is late.
func (m *Main) watchReady(ctx context.Context) {
	t := time.NewTimer(SnapshotWarnAfter)
	defer t.Stop()
	for {
		select {
		case <-m.Store.Ready():
			st := m.Store.Status()
			m.Config.Logger.Info("auth-gateway snapshot loaded", "generation", st.Generation, "credentials", st.Entries)
			return
		case <-t.C:
			m.Config.Logger.Warn("auth-gateway still waiting for the broker snapshot; requests wait", "broker", m.Config.BrokerURL, "error", m.Store.Status().LastError)
			t.Reset(SnapshotWarnAfter)
		case <-ctx.Done():
			return
		}
	}
}

// Close releases the listener (when Run never ran). Safe to call twice.
func (m *Main) Close() error {
	if m.ln != nil {
		m.ln.Close()
	}
	return nil
}

// Serve opens a gateway with cfg, runs it until ctx is cancelled and closes
// it: the whole life of `omp auth-gateway serve` and cmd/gateway.
func Serve(ctx context.Context, cfg Config) error {
	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	runDone := make(chan struct{})
	announced := make(chan struct{})
	go func() {
		defer close(announced)
		announceShutdown(ctx, runDone, m.Config.Out)
	}()
	err := m.Run(ctx)
	close(runDone)
	<-announced
	return err
}

// ErrNoBroker is Open's error when no broker is configured; its text is
// the reference's MsgNoBroker.
var ErrNoBroker error = exactError(MsgNoBroker)

// exactError is an error whose text is a reference message, punctuation
// included.
type exactError string

func (e exactError) Error() string { return string(e) }

// SnapshotError is Open's error when the broker did not answer the initial
// snapshot; Error is the exact reference text, Err the cause.
type SnapshotError struct{ Err error }

func (e *SnapshotError) Error() string { return MsgNoSnapshot }
func (e *SnapshotError) Unwrap() error { return e.Err }

// IsLoopback reports whether a bind host is loopback: 127.0.0.0/8, ::1 or
// localhost.
func IsLoopback(host string) bool {
	h := trimBrackets(host)
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// status is the remote store's sync state as /healthz detail.
type status struct {
	Mode       string `json:"mode"`
	Generation int64  `json:"generation"`
	LastSync   string `json:"lastSync,omitempty"`
	LastError  string `json:"lastError,omitempty"`
	Entries    int    `json:"credentials"`
}

func syncStatus(s remote.Status) status {
	out := status{Mode: s.Mode, Generation: s.Generation, LastError: s.LastError, Entries: s.Entries}
	if !s.LastSync.IsZero() {
		out.LastSync = s.LastSync.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// hostForURL brackets a bare IPv6 host.
func hostForURL(h string) string {
	if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
		return "[" + h + "]"
	}
	return h
}

// announceShutdown prints the reference's shutdown line on out as soon as
// ctx is cancelled by a signal (while the server drains), or at the latest
// once runDone is closed.
func announceShutdown(ctx context.Context, runDone <-chan struct{}, out io.Writer) {
	select {
	case <-ctx.Done():
	case <-runDone:
	}
	if se, ok := context.Cause(ctx).(*sigctx.SignalError); ok {
		fmt.Fprintf(out, "\nReceived %s, shutting down...\n", se)
	}
}
