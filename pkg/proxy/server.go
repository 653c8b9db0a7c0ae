package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/usagepage"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/usage"
)

// BodyLimit is the largest request body the gateway reads (32 MiB); a
// larger one is answered 413 in the route's envelope.
const BodyLimit = 32 << 20

// Options configure a Server.
type Options struct {
	// Source is where credentials come from (the remote store in
	// production); required. When it also has Prepare(ctx, id) the
	// picker brings a credential up to date through it before use.
	Source vault.Source
	// Tokens is the bearer allow-list, checked in constant time against
	// Authorization: Bearer and x-api-key.
	Tokens []string
	// NoAuth serves without a token (the caller decides when that is
	// allowed). Such a gateway refuses what a web page could send: a Host
	// other than localhost, an IP address or AllowedHosts; an Origin other
	// than its own or AllowedOrigins; a non-JSON POST body.
	NoAuth bool
	// AllowedHosts are the Host names a NoAuth gateway answers besides
	// localhost, *.localhost and IP addresses (port ignored).
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port]) a
	// NoAuth gateway answers besides its own.
	AllowedOrigins []string
	// MaxInFlightBytes caps the request body bytes all requests hold at
	// once; a request that does not fit is answered 503 with Retry-After.
	// 0 is DefaultMaxInFlightBytes; negative is no cap.
	MaxInFlightBytes int64
	// Logger receives the request lines; default slog.Default(). A token
	// is never logged.
	Logger *slog.Logger
	// Version is surfaced by /healthz.
	Version string
	// URLs returns an upstream base URL override for a provider (kind
	// "baseUrl"; "" = the provider default). May be nil.
	URLs func(provider, kind string) string
	// HTTPClient makes the upstream calls; default a client without an
	// overall timeout (streams can be long).
	HTTPClient *http.Client
	// Status returns extra /healthz detail (the remote store's sync
	// state) under "broker"; may be nil.
	Status func() any
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Probers are the usage probes of GET /v1/credentials/check and
	// CheckCredentials; default usage.DefaultProbers(). Their base URLs
	// come from URLs(provider, usage.KindUsageURL).
	Probers []usage.Prober
	// Sync reports the broker sync state for GET /metrics (sync lag and
	// mode); may be nil.
	Sync func() SyncState
	// History relays GET /v1/usage/history to the broker with the caller's
	// query (sinceMs, days, provider); nil answers 404. A *vault.Error with
	// EINVALID or ENOTFOUND keeps its status and message.
	History func(ctx context.Context, query url.Values) (HistoryPage, error)
	// Policies are the account policies of credential choice (routing
	// priority and usage reserve per OAuth account); nil: none.
	Policies *pick.Policies
	// Observe receives the token burn of every settled upstream request,
	// errored and aborted ones included, those with neither tokens nor
	// cost skipped; it must not block. nil: nothing is recorded.
	Observe func(Observed)
}

// HistoryPage is the broker's usage-history answer.
type HistoryPage struct {
	GeneratedAt int64
	Entries     []vault.UsageHistoryEntry
	Truncated   bool
}

// Server is the gateway's HTTP core. Build it with New.
type Server struct {
	source   vault.Source
	bearer   *httpx.Bearer // nil when NoAuth
	log      *slog.Logger
	version  string
	urls     func(provider, kind string) string
	client   *http.Client
	status   func() any
	history  func(ctx context.Context, query url.Values) (HistoryPage, error)
	observer func(Observed)
	now      func() time.Time
	picker   *pick.Picker
	// sessions are the client sessions' provider states (fallbacks).
	sessions *sessionStates
	probers  []usage.Prober
	metrics  *metrics
	models   *models
	router   http.Handler
	// unauthLog limits the 401 log lines.
	unauthLog httpx.LogLimiter
	// pingInterval is PingInterval (tests shorten it).
	pingInterval time.Duration
	// browser is the NoAuth gateway's Host and Origin allow-list; nil
	// with a token.
	browser *browserPolicy
	// inflight caps the body bytes of the requests in progress.
	inflight *inflight
	// bodyLimit is the largest body one request may send: BodyLimit, or
	// the in-flight cap when that is smaller.
	bodyLimit int64
}

// New builds a Server. It fails when Source is nil, or when there is no
// token and NoAuth is false.
func New(o Options) (*Server, error) {
	if o.Source == nil {
		return nil, errors.New("proxy: Options.Source is required")
	}
	s := &Server{
		source: o.Source, log: o.Logger, version: o.Version, urls: o.URLs,
		client: o.HTTPClient, status: o.Status, now: o.Now, history: o.History,
		observer: o.Observe,
	}
	if !o.NoAuth || len(o.Tokens) > 0 {
		b, err := httpx.NewBearer(o.Tokens)
		if err != nil {
			return nil, errors.New("proxy: a bearer token is required unless NoAuth is set")
		}
		s.bearer = b
	} else {
		s.browser = newBrowserPolicy(o.AllowedHosts, o.AllowedOrigins)
	}
	s.inflight = &inflight{limit: o.MaxInFlightBytes}
	switch {
	case o.MaxInFlightBytes == 0:
		s.inflight.limit = DefaultMaxInFlightBytes
	case o.MaxInFlightBytes < 0:
		s.inflight.limit = 0
	}
	s.bodyLimit = BodyLimit
	if s.inflight.limit > 0 && s.inflight.limit < s.bodyLimit {
		s.bodyLimit = s.inflight.limit
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.urls == nil {
		s.urls = func(string, string) string { return "" }
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.pingInterval = PingInterval
	s.probers = o.Probers
	if s.probers == nil {
		s.probers = usage.DefaultProbers()
	}
	s.picker = &pick.Picker{Source: o.Source, Now: s.now, Log: s.log, Policies: o.Policies}
	s.sessions = newSessionStates(MaxSessionStates)
	s.models = &models{catalog: llm.Builtin()}
	s.metrics = newMetrics(s, o.Sync)
	s.router = s.routes()
	return s, nil
}

// Handler returns the gateway's http.Handler.
func (s *Server) Handler() http.Handler { return s.router }

// routes registers the routes in the reference's order: OPTIONS
// and /healthz before auth, then the inference routes, /v1/models, and
// the generic 404. Without a token, the Host and Origin checks come
// first, and CORS names the caller's origin instead of "*".
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	if s.browser != nil {
		r.Use(s.metrics.middleware, s.guard, cors(true), s.authenticate)
	} else {
		r.Use(s.metrics.middleware, cors(false), s.authenticate)
	}
	generic := httpx.Adapter{Logger: s.log, CrashMessage: "auth-gateway handler crashed"}
	r.Method(http.MethodGet, "/healthz", generic.Handler(s.healthz))
	r.Method(http.MethodGet, "/v1/usage", generic.Handler(s.usage))
	r.Method(http.MethodGet, "/v1/usage/history", generic.Handler(s.usageHistory))
	r.Method(http.MethodGet, usagepage.Path, usagepage.Handler())
	r.Method(http.MethodGet, "/v1/credentials/check", generic.Handler(s.credentialsCheck))
	r.Method(http.MethodGet, "/v1/models", generic.Handler(s.listModels))
	r.Method(http.MethodGet, "/metrics", s.metrics.handler())
	for path, f := range map[string]*format{
		"/v1/chat/completions": chatFormat,
		"/v1/messages":         messagesFormat,
		"/v1/responses":        responsesFormat,
		"/v1/pi/stream":        piFormat,
	} {
		a := httpx.Adapter{Logger: s.log, CrashMessage: "auth-gateway handler crashed", Classify: problem, Render: f.render}
		r.Method(http.MethodPost, path, a.Handler(s.inference(f)))
	}
	s.geminiRoutes(r)
	s.mediaRoutes(r)
	r.NotFound(noRoute)
	r.MethodNotAllowed(noRoute)
	return r
}

// CORS headers of every response.
const (
	corsAllowHeaders  = "authorization, content-type, anthropic-version, anthropic-beta, anthropic-user-profile-id, openai-organization, openai-project, x-stainless-*, x-api-key"
	corsExposeHeaders = "x-request-id, request-id, x-litellm-model-id, x-litellm-model-api-base, x-litellm-response-cost, x-litellm-response-duration-ms, openai-processing-ms"
)

// corsValues are the CORS header values, shared by every response: set
// straight into the header map (the keys are canonical) rather than
// through Header.Set, which allocates a value slice per header per
// request. Nothing modifies a header value in place, and each slice is
// full (len = cap), so an Add copies instead of writing into it.
var corsValues = struct{ origin, methods, allow, maxAge, expose, vary []string }{
	[]string{"*"}, []string{"GET, POST, OPTIONS"}, []string{corsAllowHeaders}, []string{"86400"}, []string{corsExposeHeaders}, []string{"Origin"},
}

// cors sets the CORS headers on every response and answers any OPTIONS
// request 204 without auth. With echoOrigin (a NoAuth gateway, whose guard
// has already checked the Origin) the allowed origin is the request's own,
// never "*", and there is none without an Origin; otherwise it is "*".
func cors(echoOrigin bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			if !echoOrigin {
				h["Access-Control-Allow-Origin"] = corsValues.origin
			} else {
				if o := r.Header.Get("Origin"); o != "" {
					h["Access-Control-Allow-Origin"] = []string{o}
				}
				h["Vary"] = corsValues.vary
			}
			h["Access-Control-Allow-Methods"] = corsValues.methods
			h["Access-Control-Allow-Headers"] = corsValues.allow
			h["Access-Control-Max-Age"] = corsValues.maxAge
			h["Access-Control-Expose-Headers"] = corsValues.expose
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// authenticate lets GET /healthz and the usage page (GET /usage, no data:
// its script sends the token) through and requires the gateway token
// everywhere else, before routing, so an unknown route is 401 without it.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The escaped path, as the router sees it: "/%68ealthz" is not
		// /healthz to chi, so it must not pass as open either.
		p := r.URL.EscapedPath()
		open := r.Method == http.MethodGet && (p == "/healthz" || p == usagepage.Path)
		if s.bearer == nil || open || s.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.unauthorized(w, r)
	})
}

// unauthorized answers 401. Its log line is rate limited (one per
// httpx.DefaultLogWindow, with the count of those held back) and its
// fields clipped: anyone who can connect can make the gateway write it.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	s.unauthLog.LogRequest(s.log, "auth-gateway request unauthorized", r)
	if isGeminiPath(r) {
		renderGemini(w, r, httpx.Problem{Status: http.StatusUnauthorized, Message: "API key not valid. Pass the gateway token as x-goog-api-key, ?key= or a bearer token."})
		return
	}
	writeGeneric(w, http.StatusUnauthorized, []byte(`{"error":"unauthorized"}`))
}

// authorized checks Authorization: Bearer, then x-api-key (the Anthropic
// SDK's default), then on the Gemini routes x-goog-api-key and the key
// query parameter (the Gemini SDKs'), all in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.bearer.Authorized(r) {
		return true
	}
	if k := r.Header.Get("x-api-key"); k != "" && s.bearer.Allow(k) {
		return true
	}
	if !isGeminiPath(r) {
		return false
	}
	k := geminiKey(r)
	return k != "" && s.bearer.Allow(k)
}

// noRoute answers every unknown method/path.
func noRoute(w http.ResponseWriter, r *http.Request) {
	if isGeminiPath(r) {
		renderGemini(w, r, httpx.Problem{Status: http.StatusNotFound, Message: "No route: " + r.Method + " " + r.URL.EscapedPath()})
		return
	}
	body, _ := json.Marshal(map[string]string{"error": "No route: " + r.Method + " " + r.URL.EscapedPath()})
	writeGeneric(w, http.StatusNotFound, body)
}

// healthz answers GET /healthz: {"ok":true,"version":…} plus the
// Source's sync state under "broker" when Options.Status is set.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	v := struct {
		OK      bool   `json:"ok"`
		Version string `json:"version"`
		Broker  any    `json:"broker,omitempty"`
	}{OK: true, Version: s.version}
	if s.status != nil {
		v.Broker = s.status()
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, body)
	return nil
}

// writeGeneric writes a generic JSON response.
func writeGeneric(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = httpx.WriteJSONBytes(w, status, body)
}
