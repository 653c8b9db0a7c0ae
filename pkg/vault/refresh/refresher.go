// Package refresh is the broker's background OAuth refresher:
// a sweep that rotates every active OAuth credential close to expiry, and
// RefreshNow for the POST /v1/credential/{id}/refresh endpoint (and the usage
// probe). Both share one path, single-flighted per credential id: re-read the
// row, re-check it, call the provider, classify a failure, persist the
// result — and only then return or publish anything.
//
// # A token a provider gave us is never dropped
//
// A rotated refresh token is the only copy: the one it replaced is spent, and
// providers with reuse detection revoke the whole token family when it is
// presented again (RFC 9700 §4.14.2). So the write-back goes
// through a Keeper, a vault.Store decorator, and follows four rules:
//
//  1. Never drop: if persisting the refreshed credential fails (any error
//     but ENOTFOUND, which means the row was disabled or removed meanwhile),
//     the fresh credential is kept as a pending write.
//  2. Serve from memory: while pending, the Keeper's List and Get return the
//     fresh credential, so snapshots, streams, usage probes and the next
//     refresh use the NEW tokens and the replaced refresh token is never
//     presented again. The refresh itself succeeds: the token is valid.
//  3. Retry: Keeper.Run retries the write with jittered exponential backoff
//     (100 ms doubling to 30 s) until it lands; Keeper.Close tries once more
//     at shutdown. One ERROR line when a row's write first fails, one INFO
//     line when it lands.
//  4. Compare-and-set: a retry writes only if the row is still active and
//     still holds the credential the refresh started from; if a newer upload
//     or login replaced it, or it was disabled, the pending value is dropped
//     (the newer state wins) with an INFO line.
//
// Why a decorator rather than a cache inside the Refresher: the snapshot hub,
// the usage service and the metrics all read the vault through vault.Store;
// wrapping the store makes every reader see the served credential without
// knowing about pending writes, works over any vault.Store (the SQLite
// adapter reports a full or read-only vault as EUNAVAILABLE), and gives the
// retry loop one owner with a Run/Close lifecycle. The Refresher's Store is a
// *Keeper, so a refresher cannot be wired without it.
package refresh

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// Defaults.
const (
	DefaultInterval    = 60 * time.Second // DEFAULT_REFRESH_INTERVAL_MS
	DefaultSkew        = 5 * time.Minute  // DEFAULT_REFRESH_SKEW_MS
	DefaultTimeout     = 10 * time.Second // DEFAULT_OAUTH_REFRESH_TIMEOUT_MS
	DefaultConcurrency = 8
	// DefaultMinForcedInterval is the least time between two forced
	// refreshes of one credential that reach its token endpoint.
	DefaultMinForcedInterval = 30 * time.Second
)

// Outcomes reported to OnResult.
const (
	OutcomeOK         = "ok"
	OutcomeDefinitive = "definitive"
	OutcomeTransient  = "transient"
)

// TokenRefresher refreshes one OAuth credential at its provider;
// *oauth.Registry implements it. Failures are classified with oauth.Classify.
type TokenRefresher interface {
	Refresh(ctx context.Context, provider string, cred vault.Credential, hc *http.Client) (vault.Credential, error)
}

var _ TokenRefresher = (*oauth.Registry)(nil)

// Refresher keeps the vault's OAuth credentials fresh. Store and OAuth are
// required; every other field has a useful zero value. Fields must not be
// changed after the first call of a method.
type Refresher struct {
	// Store is the vault, read and written through a Keeper so that a
	// rotated refresh token is never dropped (see the package doc). Run the
	// Keeper (Keeper.Run) alongside the Refresher.
	Store *Keeper
	OAuth TokenRefresher
	// HTTP is the client for token endpoints; nil means http.DefaultClient.
	HTTP *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives refresh logs; nil discards them.
	Logger *slog.Logger
	// Interval between sweeps; 0 means DefaultInterval (60 s).
	Interval time.Duration
	// Skew: a sweep refreshes credentials expiring within it; 0 means DefaultSkew (5 min).
	Skew time.Duration
	// Timeout bounds each upstream refresh; 0 means DefaultTimeout (10 s).
	Timeout time.Duration
	// Concurrency bounds parallel refreshes within a sweep; 0 means DefaultConcurrency (8).
	Concurrency int
	// MinForcedInterval is the least time between the last successful
	// refresh of a credential and a forced refresh (RefreshNow) that calls
	// its token endpoint again; a forced refresh sooner returns the
	// credential just refreshed. It bounds how often a client can make the
	// broker rotate a token. 0 means DefaultMinForcedInterval (30 s); a
	// negative value means no minimum.
	MinForcedInterval time.Duration
	// OnResult, if set, is called after every upstream attempt with the
	// provider and OutcomeOK, OutcomeDefinitive or OutcomeTransient (metrics).
	OnResult func(provider, outcome string)
	// OnChange, if set, is called after this refresher changed the vault (a
	// refreshed row was persisted or a row was disabled), after the write
	// committed, so that snapshots are republished. It is independent of any
	// change hook of the Store itself.
	OnChange func()

	mu          sync.Mutex        // guards flights, nextSweepAt and lastOK
	flights     map[int64]*flight // in-flight refreshes by credential id
	nextSweepAt int64             // epoch ms; the running sweep's start while one runs
	lastOK      map[int64]success // the last successful refresh of each credential

	sweeping atomic.Bool // a sweep is running

	onJoin func(id int64, waiters int) // test hook: a caller joined a flight (called under mu)
}

// flight is one upstream attempt shared by every caller for an id.
type flight struct {
	force   bool          // started by RefreshNow (refresh regardless of expiry)
	waiters int           // callers waiting (guarded by Refresher.mu; for tests)
	done    chan struct{} // closed when rec/err/refreshed are set
	rec     vault.Record
	err     error
	skipped bool // a sweep flight found the row no longer due
}

// success is a refresh that reached the token endpoint and succeeded: when,
// and the access token it stored.
type success struct {
	at     time.Time
	access string
}

// errAborted is returned to a caller whose context ends before the shared
// attempt does; the attempt itself continues for the others.
func errAborted(ctx context.Context) error {
	return &vault.Error{Code: vault.EUNAVAILABLE, Message: "OAuth token refresh aborted by caller", Err: context.Cause(ctx)}
}

func (r *Refresher) interval() time.Duration { return orDefault(r.Interval, DefaultInterval) }
func (r *Refresher) skew() time.Duration     { return orDefault(r.Skew, DefaultSkew) }
func (r *Refresher) timeout() time.Duration  { return orDefault(r.Timeout, DefaultTimeout) }

func (r *Refresher) minForcedInterval() time.Duration {
	return orDefault(r.MinForcedInterval, DefaultMinForcedInterval)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (r *Refresher) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Refresher) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (r *Refresher) httpClient() *http.Client {
	if r.HTTP != nil {
		return r.HTTP
	}
	return http.DefaultClient
}

// Schedule returns the refresher's schedule for rotation estimates.
// Safe for concurrent use.
func (r *Refresher) Schedule() vault.Schedule {
	r.mu.Lock()
	next := r.nextSweepAt
	r.mu.Unlock()
	return vault.Schedule{
		Enabled:     true,
		IntervalMs:  r.interval().Milliseconds(),
		SkewMs:      r.skew().Milliseconds(),
		NextSweepAt: next,
	}
}

func (r *Refresher) setNextSweep(ms int64) {
	r.mu.Lock()
	r.nextSweepAt = ms
	r.mu.Unlock()
}

// Run sweeps once immediately and then every Interval until ctx ends; a tick
// that finds the previous sweep still running is skipped. On cancellation it
// stops starting refreshes, waits for the ones in flight (each bounded by
// Timeout, so that a rotated refresh token is never dropped half-way), and
// returns nil. It returns an error only for a misconfigured Refresher.
func (r *Refresher) Run(ctx context.Context) error {
	if r.Store == nil || r.Store.Store == nil || r.OAuth == nil {
		return errors.New("refresh: Refresher needs a Store (a Keeper over a vault.Store) and an OAuth refresher")
	}
	r.setNextSweep(r.now().UnixMilli())
	var wg sync.WaitGroup // sweeps started by this loop; Add and Wait only here
	start := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Sweep(ctx)
		}()
	}
	start()
	tick := time.NewTicker(r.interval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			r.Wait()
			return nil
		case <-tick.C:
			if r.sweeping.Load() {
				r.log().Debug("auth-broker refresh sweep skipped; previous sweep still running")
				continue
			}
			start()
		}
	}
}

// Sweep runs one sweep: nextSweepAt = now; list the active
// OAuth credentials; refresh, in parallel (at most Concurrency at once),
// those with expires <= now + Skew; finally nextSweepAt = finish + Interval.
// A Sweep called while another runs returns at once. Failures are logged,
// classified and, when definitive, disable their credential.
func (r *Refresher) Sweep(ctx context.Context) {
	if !r.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer r.sweeping.Store(false)
	r.setNextSweep(r.now().UnixMilli())
	defer func() { r.setNextSweep(r.now().Add(r.interval()).UnixMilli()) }()

	recs, err := r.Store.List(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			r.log().Warn("auth-broker refresh sweep could not list credentials", "error", err)
		}
		return
	}
	deadline := r.now().Add(r.skew()).UnixMilli()
	var targets []int64
	for _, rec := range recs {
		if rec.Credential.IsOAuth() && rec.Credential.Expires <= deadline {
			targets = append(targets, rec.ID)
		}
	}
	sem := make(chan struct{}, r.concurrency())
	var wg sync.WaitGroup
	for _, id := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, _ = r.do(ctx, id, false) // logged and classified inside the flight
		}()
	}
	wg.Wait()
}

func (r *Refresher) concurrency() int {
	if r.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return r.Concurrency
}

// RefreshNow refreshes credential id now, whatever its expiry, sharing an
// attempt already in flight for id. It returns the persisted record. Within
// MinForcedInterval of the last successful refresh of id, while the row
// still holds the credential that refresh stored, it returns the row as it
// is without calling the token endpoint.
//
// Errors (all *vault.Error with a client-safe message): ENOTFOUND
// "No credential with id=<id>" for a missing or disabled row; EINVALID
// "Credential <id> is not OAuth (provider=<p>, type=api_key): API-key
// credentials have nothing to refresh"; EUPSTREAM with
// the provider's failure text or "OAuth token refresh timed out for provider:
// <p>"; EUNAVAILABLE "OAuth token refresh aborted by caller" when ctx ends
// first (the shared attempt continues and is still persisted). A definitive
// failure also disables the row.
func (r *Refresher) RefreshNow(ctx context.Context, id int64) (vault.Record, error) {
	return r.do(ctx, id, true)
}

// do joins or starts the flight for id and waits for it or for ctx.
func (r *Refresher) do(ctx context.Context, id int64, force bool) (vault.Record, error) {
	for {
		if ctx.Err() != nil {
			return vault.Record{}, errAborted(ctx)
		}
		f := r.join(ctx, id, force)
		select {
		case <-f.done:
		case <-ctx.Done():
			r.leave(f)
			return vault.Record{}, errAborted(ctx)
		}
		r.leave(f)
		// A forced caller that joined a sweep flight which found the row no
		// longer due must still refresh: start (or join) a forced flight.
		if force && f.skipped {
			continue
		}
		return f.rec, f.err
	}
}

func (r *Refresher) join(ctx context.Context, id int64, force bool) *flight {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flights == nil {
		r.flights = map[int64]*flight{}
	}
	f, ok := r.flights[id]
	if !ok {
		f = &flight{force: force, done: make(chan struct{})}
		r.flights[id] = f
		// Detached from the caller: one caller going away must not cancel
		// the attempt the others share, nor lose a rotated refresh token.
		fctx := context.WithoutCancel(ctx)
		go func() {
			rec, skipped, err := r.refreshOne(fctx, id, force)
			r.mu.Lock()
			delete(r.flights, id)
			f.rec, f.skipped, f.err = rec, skipped, err
			r.mu.Unlock()
			close(f.done)
		}()
	}
	f.waiters++
	if r.onJoin != nil {
		r.onJoin(id, f.waiters)
	}
	return f
}

func (r *Refresher) leave(f *flight) {
	r.mu.Lock()
	f.waiters--
	r.mu.Unlock()
}

// Wait blocks until no refresh is in flight.
func (r *Refresher) Wait() {
	for {
		r.mu.Lock()
		var done chan struct{}
		for _, f := range r.flights {
			done = f.done
			break
		}
		r.mu.Unlock()
		if done == nil {
			return
		}
		<-done
	}
}
