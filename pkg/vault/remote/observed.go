package remote

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// Observed-usage reporting defaults.
const (
	// DefaultObservedFlush is the delay between the first record after a
	// flush and the flush (the reference's observedUsageFlushMs).
	DefaultObservedFlush = 10 * time.Second
	// MaxObservedPending caps the pending (installId, app, provider,
	// model) keys while the broker is unreachable; the oldest go first.
	MaxObservedPending  = 1000
	observedPostTimeout = 10 * time.Second
)

// Observation is the token burn of one settled request (an agent turn, a
// gateway upstream request) as a broker client reports it.
type Observation struct {
	InstallID, Hostname, App string
	Provider, Model          string
	// CredentialID is the credential that served the request (0 =
	// unknown); reported only to a broker that asks for it.
	CredentialID     int64
	AtMs             int64 // epoch ms the request settled; 0 = now
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUsd          float64
}

// Tokens is the observation's total token count.
func (o Observation) Tokens() int64 {
	return o.InputTokens + o.OutputTokens + o.CacheReadTokens + o.CacheWriteTokens
}

// Reporter batches observed usage and sends it to the broker (POST
// /v1/usage/observed): pending entries are keyed
// (installId, app, provider, model, credential) and merged (largest at, counters
// summed, one request per record); the first record after a flush arms one
// timer of Every, and the flush sends one report per (installId, app),
// sequentially; the credential id goes out only to a broker that announced
// it takes one (api.ObservedCredentialIDs, else two accounts' entries
// of one model are two entries of the reference shape). A 404 or 501 turns reporting off for the
// life of the Reporter; a 400 resends the batch once without app and, if
// that is accepted, omits app from then on (a second 400 drops the batch,
// reporting stays on); any other failure merges the batch back for the
// next flush. At most MaxObservedPending keys are kept.
//
// The zero value is not usable: Client is required. A Reporter is safe for
// concurrent use; Close flushes what is pending and waits for it.
type Reporter struct {
	// Client talks to the broker; required.
	Client *brokerclient.Client
	// Every is the flush delay; default DefaultObservedFlush.
	Every time.Duration
	// Logger receives warnings (never a token); default discards.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	pending map[observedKey]*observedEntry // guarded by mu
	seq     uint64                         // insertion counter for the oldest-first cap
	timer   *time.Timer
	off     bool // the broker does not take observed usage (404/501)
	noApp   bool // the broker rejects the app key (400 then accepted without it)
	closed  bool
	flushMu sync.Mutex // one flush at a time
	wg      sync.WaitGroup
}

type observedKey struct {
	installID, app, provider, model string
	credentialID                    int64
}

type observedEntry struct {
	seq      uint64
	hostname string
	e        api.ObservedUsageEntry
}

func (r *Reporter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reporter) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Record adds one settled request. Zero-token observations are skipped.
func (r *Reporter) Record(o Observation) {
	if o.Tokens() == 0 || o.InstallID == "" {
		return
	}
	if o.AtMs == 0 {
		o.AtMs = r.now().UnixMilli()
	}
	if math.IsNaN(o.CostUsd) || math.IsInf(o.CostUsd, 0) {
		o.CostUsd = 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off || r.closed {
		return
	}
	r.merge(observedKey{o.InstallID, o.App, o.Provider, o.Model, o.CredentialID}, o.Hostname, api.ObservedUsageEntry{
		At: o.AtMs, Provider: o.Provider, Model: o.Model, CredentialID: o.CredentialID, Requests: 1,
		InputTokens: o.InputTokens, OutputTokens: o.OutputTokens,
		CacheReadTokens: o.CacheReadTokens, CacheWriteTokens: o.CacheWriteTokens, CostUsd: o.CostUsd,
	})
	r.armLocked()
}

// merge adds e under k; r.mu is held.
func (r *Reporter) merge(k observedKey, hostname string, e api.ObservedUsageEntry) {
	if r.pending == nil {
		r.pending = map[observedKey]*observedEntry{}
	}
	if p, ok := r.pending[k]; ok {
		p.e.At = max(p.e.At, e.At)
		p.e.Requests += e.Requests
		p.e.InputTokens += e.InputTokens
		p.e.OutputTokens += e.OutputTokens
		p.e.CacheReadTokens += e.CacheReadTokens
		p.e.CacheWriteTokens += e.CacheWriteTokens
		p.e.CostUsd += e.CostUsd
		if hostname != "" {
			p.hostname = hostname
		}
		return
	}
	for len(r.pending) >= MaxObservedPending {
		var oldest observedKey
		first := true
		for k2, p := range r.pending {
			if first || p.seq < r.pending[oldest].seq {
				oldest, first = k2, false
			}
		}
		delete(r.pending, oldest)
	}
	r.seq++
	r.pending[k] = &observedEntry{seq: r.seq, hostname: hostname, e: e}
}

// armLocked starts the flush timer unless one is armed; r.mu is held.
func (r *Reporter) armLocked() {
	if r.timer != nil || len(r.pending) == 0 {
		return
	}
	every := r.Every
	if every <= 0 {
		every = DefaultObservedFlush
	}
	r.wg.Add(1)
	r.timer = time.AfterFunc(every, func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 4*observedPostTimeout)
		defer cancel()
		r.Flush(ctx)
	})
}

// Flush sends what is pending now, one report per (installId, app).
func (r *Reporter) Flush(ctx context.Context) {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	if r.timer != nil && r.timer.Stop() {
		r.wg.Done() // the armed flush will not run
	}
	r.timer = nil
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()

	type group struct{ installID, app string }
	reports := map[group]*api.ClientUsageReport{}
	var order []group
	for k, p := range batch {
		g := group{k.installID, k.app}
		rep, ok := reports[g]
		if !ok {
			rep = &api.ClientUsageReport{InstallID: k.installID, App: k.app}
			reports[g] = rep
			order = append(order, g)
		}
		if p.hostname != "" {
			rep.Hostname = p.hostname
		}
		rep.Entries = append(rep.Entries, p.e)
	}
	for _, g := range order {
		if r.send(ctx, *reports[g]) {
			continue
		}
		// Not sent and not refused: merged back for the next flush.
		r.mu.Lock()
		if !r.off {
			for k, p := range batch {
				if k.installID == g.installID && k.app == g.app {
					r.merge(k, p.hostname, p.e)
				}
			}
			if !r.closed {
				r.armLocked()
			}
		}
		r.mu.Unlock()
	}
}

// send posts one report; false when it should be retried later.
func (r *Reporter) send(ctx context.Context, rep api.ClientUsageReport) bool {
	r.mu.Lock()
	off, noApp := r.off, r.noApp
	r.mu.Unlock()
	if off {
		return true
	}
	if noApp {
		rep.App = ""
	}
	pctx, cancel := context.WithTimeout(ctx, observedPostTimeout)
	err := r.Client.PostObserved(pctx, rep)
	cancel()
	if err == nil {
		return true
	}
	switch status(err) {
	case http.StatusNotFound, http.StatusNotImplemented:
		r.mu.Lock()
		r.off, r.pending = true, nil
		r.mu.Unlock()
		r.log().Debug("auth-broker does not accept observed usage; reporting disabled")
		return true
	case http.StatusBadRequest:
		if rep.App == "" {
			r.log().Warn("auth-broker refused observed usage; batch dropped", "error", err.Error())
			return true
		}
		// Brokers 17.1.2–18.0.6 reject the app key.
		rep.App = ""
		pctx, cancel := context.WithTimeout(ctx, observedPostTimeout)
		err = r.Client.PostObserved(pctx, rep)
		cancel()
		if err == nil {
			r.mu.Lock()
			r.noApp = true
			r.mu.Unlock()
			return true
		}
		if status(err) == http.StatusBadRequest {
			r.log().Warn("auth-broker refused observed usage; batch dropped", "error", err.Error())
			return true
		}
	}
	r.log().Debug("auth-broker observed usage post failed; retrying at the next flush", "error", err.Error())
	return false
}

// status is the HTTP status of a broker error, 0 for transport errors.
func status(err error) int {
	var be *brokerclient.Error
	if errors.As(err, &be) {
		return be.Status
	}
	return 0
}

// Close flushes what is pending (bounded by ctx) and waits for a running
// flush; records after Close are dropped.
func (r *Reporter) Close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.Flush(ctx)
	r.wg.Wait()
}
