package server

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
)

// TokenSource is where the server reads named client tokens (the vault;
// pkg/vault/sqlite implements it).
type TokenSource interface {
	// ClientTokens returns every client token.
	ClientTokens(ctx context.Context) ([]vault.ClientToken, error)
	// TokensVersion moves on every token create and revoke.
	TokensVersion(ctx context.Context) (int64, error)
}

// DefaultTokenPollInterval is how often Run re-reads the token version, so
// a token created or revoked by another process (`omp auth-broker token`)
// takes effect, and a revoked token's open streams close, within it.
const DefaultTokenPollInterval = 250 * time.Millisecond

// Routes a client-scope token may use ("METHOD pattern", chi patterns).
// Every other authenticated route needs admin scope (the shared bearer or
// an admin token); adding a route therefore denies it to clients until it
// is listed here. GET /v1/usage/history is the accounts' utilisation over
// time — what GET /v1/usage shows, kept — and `omp usage --history`,
// the gateway's history relay and the usage page read it with the member's
// token; other clients' burn (GET /v1/usage/clients) stays admin.
var clientRoutes = map[string]bool{
	"GET /v1/snapshot":                        true,
	"GET /v1/snapshot/stream":                 true,
	"GET /v1/usage":                           true,
	"GET /v1/usage/history":                   true,
	"POST /v1/credential/{id:[0-9]+}/refresh": true,
	"POST /v1/credential/{id:[0-9]+}/block":   true,
	"POST /v1/usage/observed":                 true,
}

// adminActions is the <action> of the 403 `token <name> may not <action>`
// a client token gets on an admin route. A route missing here is named
// "use <METHOD> <pattern>".
var adminActions = map[string]string{
	"POST /v1/credential":                      "upload credentials",
	"POST /v1/credential/{id:[0-9]+}/disable":  "disable credentials",
	"DELETE /v1/credential/{id:[0-9]+}/blocks": "lift blocks",
	"POST /v1/usage/stale":                     "expire usage reports",
	"GET /v1/usage/clients":                    "read client usage",
	"GET /v1/credentials/disabled":             "list disabled credentials",
	"GET /metrics":                             "read metrics",
}

// principal is who a request authenticated as.
type principal struct {
	name   string // vault.SharedTokenName for the shared bearer
	scope  string // vault.ScopeClient or vault.ScopeAdmin
	named  bool   // a client token from the vault (revocable)
	digest [sha256.Size]byte
}

// sharedPrincipal is the shared bearer's (one value: no allocation per request).
var sharedPrincipal = &principal{name: vault.SharedTokenName, scope: vault.ScopeAdmin}

type principalKey struct{}

// principalFrom returns the principal the auth middleware stored in ctx,
// or nil (healthz, the usage page).
func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// observedInstallID is the install id observed usage posted on ctx's
// request is recorded under: a client-scope token's name, whatever id the
// body claims (a client cannot report burn as another); the claimed id for
// the shared bearer and admin tokens.
func observedInstallID(ctx context.Context, claimed string) string {
	if p := principalFrom(ctx); p != nil && p.named && p.scope == vault.ScopeClient {
		return p.name
	}
	return claimed
}

// authTable is one immutable view of the allow-list.
type authTable struct {
	version int64 // TokensVersion it was built from; -1 before the first read
	bearer  *httpx.Bearer
	who     []*principal // parallel to the bearer's entries
}

// auth holds the allow-list (the shared bearer tokens plus the vault's
// client tokens) and the open requests of client tokens, so a revocation
// ends them.
type auth struct {
	src    TokenSource // nil: shared tokens only
	shared []string
	log    *slog.Logger

	table atomic.Pointer[authTable]

	mu sync.Mutex // serialises reloads; guards live
	// live holds the cancel functions of the open requests of each client
	// token (by digest). A reload cancels those of tokens that are gone.
	live map[[sha256.Size]byte]map[*liveReq]struct{}
}

type liveReq struct{ cancel context.CancelFunc }

func newAuth(shared []string, src TokenSource, log *slog.Logger) (*auth, error) {
	a := &auth{src: src, shared: shared, log: log, live: map[[sha256.Size]byte]map[*liveReq]struct{}{}}
	b, err := httpx.NewBearer(shared)
	if err != nil {
		return nil, err
	}
	who := make([]*principal, len(shared))
	for i := range who {
		who[i] = sharedPrincipal
	}
	a.table.Store(&authTable{version: -1, bearer: b, who: who})
	return a, nil
}

// lookup returns the principal of the request's bearer, or nil.
func (a *auth) lookup(r *http.Request) *principal {
	tok, ok := httpx.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil
	}
	if p := a.match(tok); p != nil {
		return p
	}
	if a.src == nil {
		return nil
	}
	// Unknown: maybe a token created a moment ago by another process. The
	// version check is one primary-key read, cheaper than the 401's log
	// line, so a flood of wrong bearers costs little more than before. The
	// match runs again whatever reload reports: the periodic reload may
	// have installed the new table between the first match and this one.
	a.reload(context.WithoutCancel(r.Context()))
	return a.match(tok)
}

func (a *auth) match(tok string) *principal {
	t := a.table.Load()
	if i := t.bearer.Match(tok); i >= 0 {
		return t.who[i]
	}
	return nil
}

// reload re-reads the client tokens if their version moved, and ends the
// open requests of tokens that are gone. It reports whether the table
// changed. A failed read keeps the current table (logged).
func (a *auth) reload(ctx context.Context) bool {
	if a.src == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.table.Load()
	v, err := a.src.TokensVersion(ctx)
	if err != nil {
		if ctx.Err() == nil { // not a shutdown
			a.log.Warn("auth-broker token read failed", "error", err.Error())
		}
		return false
	}
	if v == cur.version {
		return false
	}
	toks, err := a.src.ClientTokens(ctx)
	if err != nil {
		if ctx.Err() == nil { // not a shutdown
			a.log.Warn("auth-broker token read failed", "error", err.Error())
		}
		return false
	}
	digests := make([][sha256.Size]byte, 0, len(toks))
	who := append(make([]*principal, 0, len(a.shared)+len(toks)), cur.who[:len(a.shared)]...)
	keep := make(map[[sha256.Size]byte]bool, len(toks))
	for _, t := range toks {
		digests = append(digests, t.Digest)
		who = append(who, &principal{name: t.Name, scope: t.Scope, named: true, digest: t.Digest})
		keep[t.Digest] = true
	}
	b, err := httpx.NewBearerSet(a.shared, digests)
	if err != nil { // unreachable: the shared tokens were accepted before
		a.log.Warn("auth-broker token table rejected", "error", err.Error())
		return false
	}
	a.table.Store(&authTable{version: v, bearer: b, who: who})
	for d, reqs := range a.live {
		if keep[d] {
			continue
		}
		for lr := range reqs {
			lr.cancel()
		}
		delete(a.live, d)
	}
	return true
}

// track registers an open request of client token p and returns the
// context to serve it with and the function to call when it ends. ok is
// false when p was revoked meanwhile (the request must be refused).
func (a *auth) track(ctx context.Context, p *principal) (_ context.Context, done func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Re-check under the lock: a reload that dropped p before we got here
	// would not have seen this request.
	t := a.table.Load()
	found := false
	// By digest and scope, not by pointer: a reload for another token's
	// change rebuilds every principal, and p is still valid then.
	for _, w := range t.who {
		if w.named && w.digest == p.digest && w.scope == p.scope {
			found = true
			break
		}
	}
	if !found {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithCancel(ctx)
	lr := &liveReq{cancel: cancel}
	reqs := a.live[p.digest]
	if reqs == nil {
		reqs = map[*liveReq]struct{}{}
		a.live[p.digest] = reqs
	}
	reqs[lr] = struct{}{}
	return ctx, func() {
		cancel()
		a.mu.Lock()
		defer a.mu.Unlock()
		if reqs := a.live[p.digest]; reqs != nil {
			delete(reqs, lr)
			if len(reqs) == 0 {
				delete(a.live, p.digest)
			}
		}
	}, true
}

// authorize wraps the handler of route ("METHOD pattern"): client routes
// pass any principal; every other route needs admin scope, else 403
// `token <name> may not <action>`.
func (s *Server) authorize(route string, h http.Handler) http.Handler {
	if clientRoutes[route] {
		return h
	}
	action := adminActions[route]
	if action == "" {
		action = "use " + route
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		if p == nil || p.scope != vault.ScopeAdmin {
			name := "?"
			if p != nil {
				name = p.name
			}
			s.log.Info("auth-broker request forbidden", "method", httpx.Clip(r.Method, httpx.MaxLoggedMethod),
				"path", httpx.Clip(r.URL.EscapedPath(), httpx.MaxLoggedPath), "token", name, httpx.Peer(r))
			httpx.WriteError(w, http.StatusForbidden, "token "+name+" may not "+action)
			return
		}
		h.ServeHTTP(w, r)
	})
}
