package server

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/usagepage"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// Defaults of the Server fields.
const (
	DefaultKeepAlive    = 20 * time.Second // DEFAULT_STREAM_KEEPALIVE_MS
	DefaultPollInterval = time.Second      // external-write detection
	// MaxWait is the longest long-poll a client may ask for.
	MaxWait = 30 * time.Second
)

// Refresher is what the API needs from the background refresher.
type Refresher interface {
	// RefreshNow refreshes the OAuth credential id regardless of its expiry
	// (single-flighted with the sweep) and returns the persisted row. It
	// returns ENOTFOUND (vault.NotFoundID) for an unknown or inactive id;
	// any other error is reported to the client as a 500 with its
	// client-safe message.
	RefreshNow(ctx context.Context, id int64) (vault.Record, error)
	// Schedule reports the sweep schedule used for rotatesInMs.
	Schedule() vault.Schedule
}

// WriteBackStatus reports refresh write-backs that have not reached the
// vault yet (refresh.Keeper implements it).
type WriteBackStatus interface {
	// Pending is the number of refreshed credentials served from memory
	// because their write-back failed.
	Pending() int
	// WriteError is the last write failure while the vault has not taken a
	// write since; nil when it is writable.
	WriteError() error
}

// UsageSource aggregates usage reports for GET /v1/usage.
type UsageSource interface {
	// Reports returns one report per account; an error becomes a 502 with
	// its client-safe message.
	Reports(ctx context.Context) ([]vault.UsageReport, error)
}

// Server is the broker's HTTP API. Set the fields, then call
// Handler and Run; fields must not change afterwards.
type Server struct {
	Store     vault.Store    // required
	Refresher Refresher      // nil: refresher disabled (rotatesInMs null, refresh endpoint 500)
	Usage     UsageSource    // nil: GET /v1/usage reports []
	History   HistorySource  // nil: GET /v1/usage/history reports []
	Disabled  DisabledSource // nil: GET /v1/credentials/disabled reports []
	// Blocks keeps the fleet's credential blocks; nil:
	// snapshots carry no blocks and the block routes answer 404 No route.
	Blocks vault.BlockStore
	// ClientUsage records observed client usage; nil: POST
	// /v1/usage/observed answers 501 and GET /v1/usage/clients reports [].
	ClientUsage vault.ClientUsageStore
	// Invalidator expires cached usage reports for POST /v1/usage/stale and
	// OAuth block posts; nil: they expire nothing.
	Invalidator UsageInvalidator
	// Tokens is the shared bearer allow-list (admin rights); the server
	// refuses to run with none.
	Tokens []string
	// ClientTokens, if set, adds the vault's named client tokens to the
	// allow-list with their scopes (re-read every TokenPollInterval and on
	// an unknown bearer). nil: the shared tokens only.
	ClientTokens TokenSource
	// TokenPollInterval is how often Run re-reads the token version; a
	// revoked token's open streams end within it. Default
	// DefaultTokenPollInterval (250 ms).
	TokenPollInterval time.Duration
	Version           string       // surfaced by /v1/healthz; omitted when empty
	Logger            *slog.Logger // default slog.Default()
	Now               func() time.Time
	// KeepAlive is the SSE keepalive period; default DefaultKeepAlive (20 s).
	KeepAlive time.Duration
	// PollInterval is how often Run polls the vault generation for writes
	// by other processes; default DefaultPollInterval (1 s).
	PollInterval time.Duration
	// WriteTimeout bounds one SSE frame write; a subscriber that cannot take
	// a frame in time is dropped. Default sse.DefaultWriteTimeout.
	WriteTimeout time.Duration
	Metrics      Observer // optional; served at GET /metrics (brokermetrics.Metrics)
	// WriteBack, if set, adds pendingWrites and vault detail to
	// /v1/healthz while write-backs are pending or the vault refuses writes.
	WriteBack WriteBackStatus

	once    sync.Once
	initErr error
	log     *slog.Logger
	auth    *auth
	hub     *hub
	adapter httpx.Adapter
	router  http.Handler
	// unauthLog limits the 401 log lines.
	unauthLog httpx.LogLimiter

	notifyOnce sync.Once
	notifyCh   chan struct{}
}

// errNoToken is returned by Run when Tokens is empty.
var errNoToken = errors.New("server: refusing to serve without a bearer token")

func (s *Server) init() error {
	s.once.Do(func() {
		s.log = s.Logger
		if s.log == nil {
			s.log = slog.Default()
		}
		if s.Now == nil {
			s.Now = time.Now
		}
		if s.KeepAlive <= 0 {
			s.KeepAlive = DefaultKeepAlive
		}
		if s.PollInterval <= 0 {
			s.PollInterval = DefaultPollInterval
		}
		if s.Store == nil {
			s.initErr = errors.New("server: Server.Store is required")
		}
		if s.TokenPollInterval <= 0 {
			s.TokenPollInterval = DefaultTokenPollInterval
		}
		var err error
		if s.auth, err = newAuth(s.Tokens, s.ClientTokens, s.log); err != nil && s.initErr == nil {
			s.initErr = errors.Join(errNoToken, err)
		}
		if s.auth != nil {
			s.auth.reload(context.Background())
		}
		s.adapter = httpx.Adapter{Logger: s.log, CrashMessage: "auth-broker handler crashed", Classify: classify}
		s.hub = &hub{store: s.Store, blocks: s.Blocks, schedule: s.schedule, now: s.Now, log: s.log, metrics: s.Metrics}
		s.router = s.routes()
	})
	return s.initErr
}

func (s *Server) schedule() vault.Schedule {
	if s.Refresher == nil {
		return vault.Schedule{}
	}
	return s.Refresher.Schedule()
}

func (s *Server) notifyChan() chan struct{} {
	s.notifyOnce.Do(func() { s.notifyCh = make(chan struct{}, 1) })
	return s.notifyCh
}

// Notify tells the hub that the vault may have changed (called by in-process
// writers: the store's and the refresher's OnChange). It never blocks;
// notifications arriving while the hub is busy are coalesced.
func (s *Server) Notify() {
	select {
	case s.notifyChan() <- struct{}{}:
	default:
	}
}

// Run is the hub loop: it re-reads the vault generation on every Notify and
// every PollInterval (catching writes by other processes) and publishes a
// new shared snapshot to long-poll waiters and stream subscribers when it
// moved. It returns nil when ctx is cancelled, or an error at once when the
// server is misconfigured (no token, no store).
func (s *Server) Run(ctx context.Context) error {
	if err := s.init(); err != nil {
		return err
	}
	t := time.NewTicker(s.PollInterval)
	defer t.Stop()
	var tokenTick <-chan time.Time // nil (never fires) without client tokens
	if s.ClientTokens != nil {
		tt := time.NewTicker(s.TokenPollInterval)
		defer tt.Stop()
		tokenTick = tt.C
	}
	notify := s.notifyChan()
	failing := false
	resync := true
	for {
		if resync {
			if _, err := s.hub.sync(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if !failing { // log once per failure streak
					s.log.Warn("auth-broker vault poll failed", "error", err.Error())
				}
				failing = true
			} else {
				failing = false
			}
		}
		resync = true
		select {
		case <-ctx.Done():
			return nil
		case <-notify:
		case <-t.C:
		case <-tokenTick:
			s.auth.reload(ctx)
			resync = false
		}
	}
}

// Handler returns the API's http.Handler (a chi router). A misconfigured
// server (no token) answers every authenticated route with 500 and logs why;
// Run reports the same misconfiguration as an error.
func (s *Server) Handler() http.Handler {
	_ = s.init()
	return s.router
}

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	if s.Metrics != nil {
		r.Use(observeRequests(s.Metrics))
	}
	r.Use(s.authenticate)
	a := s.adapter
	// Answered before the bearer check (authenticate).
	r.Method(http.MethodGet, api.PathHealthz, a.Handler(s.healthz))
	r.Method(http.MethodGet, api.PathUsagePage, usagepage.Handler())
	// Authenticated; authorize (auth.go) decides per route and scope.
	route := func(method, pattern string, h http.Handler) {
		r.Method(method, pattern, s.authorize(method+" "+pattern, h))
	}
	route(http.MethodGet, api.PathSnapshotStream, a.Handler(s.stream))
	route(http.MethodGet, api.PathSnapshot, a.Handler(s.snapshot))
	route(http.MethodGet, api.PathUsage, a.Handler(s.usage))
	route(http.MethodGet, api.PathUsageHistory, a.Handler(s.usageHistory))
	route(http.MethodGet, api.PathDisabled, a.Handler(s.disabled))
	route(http.MethodPost, credentialRoute(api.ActionRefresh), a.Handler(s.refresh))
	route(http.MethodPost, credentialRoute(api.ActionDisable), a.Handler(s.disable))
	route(http.MethodPost, credentialRoute(api.ActionBlock), a.Handler(s.postBlock))
	route(http.MethodDelete, credentialRoute(api.ActionBlocks), a.Handler(s.deleteBlocks))
	route(http.MethodPost, api.PathUsageStale, a.Handler(s.usageStale))
	route(http.MethodPost, api.PathUsageObserved, a.Handler(s.usageObserved))
	route(http.MethodGet, api.PathUsageClients, a.Handler(s.usageClients))
	route(http.MethodPost, api.PathCredential, a.Handler(s.upload))
	if s.Metrics != nil {
		route(http.MethodGet, api.PathMetrics, s.Metrics.Handler())
	}
	r.NotFound(noRoute)
	r.MethodNotAllowed(noRoute)
	return r
}

// credentialRoute is the route pattern of action on one credential.
func credentialRoute(action string) string { return api.PathCredential + "/{id:[0-9]+}/" + action }

// noRoute is the answer for every unknown method/path (after auth).
func noRoute(w http.ResponseWriter, r *http.Request) {
	httpx.WriteError(w, http.StatusNotFound, "No route: "+r.Method+" "+r.URL.EscapedPath())
}

// authenticate answers GET /v1/healthz and the usage page (GET /usage, which
// holds no data: its script sends the bearer) unauthenticated and requires
// a known bearer everywhere else, before routing (so unknown routes are 401
// too). It records the principal in the request context for authorize, ties
// a client token's requests to the token (revoking it ends them) and logs
// every write with the token's name (never the token).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, done := s.admit(w, r)
		if r == nil {
			return
		}
		if done != nil {
			defer done()
		}
		if r.Method == http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		sw := httpx.Wrap(w)
		next.ServeHTTP(sw, r)
		s.logWrite(sw, r)
	})
}

// admit returns the request to serve (carrying its principal), and for a
// client token the function that ends its tracking; nil after answering a
// refused request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, func()) {
	if r.Method == http.MethodGet {
		if p := r.URL.EscapedPath(); p == api.PathHealthz || p == usagepage.Path {
			return r, nil
		}
	}
	if s.initErr != nil {
		s.adapter.Error(w, r, s.initErr) // unexpected: logged as a crash, 500 with a request id
		return nil, nil
	}
	p := s.auth.lookup(r)
	if p == nil {
		s.unauthorized(w, r)
		return nil, nil
	}
	ctx := context.WithValue(r.Context(), principalKey{}, p)
	if !p.named {
		return r.WithContext(ctx), nil
	}
	ctx, done, ok := s.auth.track(ctx, p)
	if !ok { // revoked between lookup and now
		s.unauthorized(w, r)
		return nil, nil
	}
	return r.WithContext(ctx), done
}

// unauthorized answers 401. Its log line is rate limited (one per
// httpx.DefaultLogWindow, with the count of those held back) and its
// fields clipped: anyone who can connect can make the broker write it.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	s.unauthLog.LogRequest(s.log, "auth-broker request unauthorized", r)
	httpx.WriteError(w, http.StatusUnauthorized, "unauthorized")
}

// logWrite logs one write request with the name of the token that made it.
func (s *Server) logWrite(sw *httpx.StatusWriter, r *http.Request) {
	name := "?"
	if p := principalFrom(r.Context()); p != nil {
		name = p.name
	}
	s.log.Info("auth-broker write", "method", httpx.Clip(r.Method, httpx.MaxLoggedMethod), "path", httpx.Clip(r.URL.EscapedPath(), httpx.MaxLoggedPath),
		"status", cmp.Or(sw.Status, http.StatusOK), "token", name, httpx.Peer(r))
}
