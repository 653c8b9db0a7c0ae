package refresh

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Backoff defaults of the Keeper's write retries.
const (
	DefaultMinBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
	DefaultWriteTimeout = 10 * time.Second
)

// Keeper is a vault.Store decorator that never drops a refreshed credential
// (it is the only copy of a rotated refresh token). The refresher persists
// through Put; when the durable write fails for any reason other than
// ENOTFOUND, the fresh credential is kept in memory as a pending write and:
//
//   - List, Walk and Get return it in place of the stored one (so snapshots,
//     streams, the usage service and the next refresh all use the NEW
//     tokens), as long as the stored row is still active and still holds
//     the credential the refresh started from;
//   - Generation is the store's generation plus the number of changes of
//     the pending set, so the API hub republishes when it changes;
//   - Run retries the write with jittered exponential backoff (MinBackoff
//     doubling to MaxBackoff) until it lands, and Close tries once more;
//   - every retry is compare-and-set: if the row was disabled, or replaced
//     by a newer upload or login (its stored credential is no longer the one
//     the refresh started from), the pending value is dropped (the newer
//     one wins) and an info line is logged.
//
// Exactly one ERROR line is logged when a row's write first fails (then
// debug lines per retry) and one INFO line when it lands.
//
// The compare-and-set of a retry is check-then-write against the Store (the
// vault.Store interface has no conditional update): refresh write-backs are
// serialised by the Keeper, so in this process only a write that bypasses the
// Keeper can slip between the check and the write — the same window every
// refresh write-back has always had.
//
// Every path that receives a rotated token must go through one Keeper: the
// refresher (sweep, the HTTP refresh endpoint, the usage probe via
// RefreshNow) and, once it exists on the broker, login (it should upload
// through the Keeper's Upsert so that a pending value it supersedes is
// dropped at once). Methods not listed here pass through to Store.
//
// Set the exported fields before the first call; they must not change
// afterwards.
type Keeper struct {
	vault.Store // the durable vault; required

	// Logger receives write-back logs; nil discards them.
	Logger *slog.Logger
	// OnChange, if set, is called after the pending set changed (a value
	// became pending, was replaced, landed or was dropped), so that
	// snapshots are republished.
	OnChange func()
	// OnWriteFailure, if set, is called once per failed write attempt
	// (metrics).
	OnWriteFailure func()
	// MinBackoff is the delay before the first retry; 0 means 100 ms.
	MinBackoff time.Duration
	// MaxBackoff caps the doubling delay; 0 means 30 s.
	MaxBackoff time.Duration
	// WriteTimeout bounds each retried write; 0 means 10 s.
	WriteTimeout time.Duration
	// Rand returns a number in [0, 1) for the jitter; nil means math/rand.
	// A retry waits d/2 + Rand()·d/2 for the doubling delay d.
	Rand func() float64

	wmu sync.Mutex // serialises refresh write-backs (Put, retries, DisableIf)

	mu      sync.Mutex // guards the fields below
	pending map[int64]*pendingWrite
	bump    int64 // changes of the pending set (added to Generation)
	lastErr error // last write failure; nil after a write landed
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{} // closed when Run returns; nil if Run never started
	closed  bool
}

// pendingWrite is a refreshed credential the vault has not taken yet.
type pendingWrite struct {
	provider string
	from     vault.Credential // the stored credential the refresh started from
	fresh    vault.Credential // what the provider returned: the one served
	at       time.Time        // when fresh was received
	failures int              // failed attempts so far
	next     time.Time        // next attempt
	since    time.Time        // first failure
}

// Put persists fresh, the result of refreshing rec (as read through the
// Keeper), and returns the record now served. If the write fails with
// ENOTFOUND (the row was disabled or removed meanwhile) it returns
// vault.NotFoundID and keeps nothing; any other failure keeps fresh pending
// (see Keeper) and returns the served record with a nil error: the token is
// valid and must be used.
func (k *Keeper) Put(ctx context.Context, rec vault.Record, fresh vault.Credential) (vault.Record, error) {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	id := rec.ID
	updated, err := k.Store.UpdateCredential(ctx, id, fresh)
	if err == nil {
		k.wrote()
		k.settle(id, nil, "")
		return updated, nil
	}
	if vault.ErrorCode(err) == vault.ENOTFOUND {
		k.settle(id, nil, "row disabled or removed")
		return vault.Record{}, vault.NotFoundID(id)
	}
	k.failure()
	now := time.Now()
	k.mu.Lock()
	k.init()
	prev := k.pending[id]
	from := rec.Credential
	p := &pendingWrite{provider: rec.Provider, from: from, fresh: fresh, at: now, failures: 1, since: now}
	if prev != nil {
		if rec.Credential.Equal(prev.fresh) {
			// Refreshed on top of a pending value: the store still holds
			// the credential the first refresh started from.
			p.from = prev.from
		}
		p.failures, p.since = prev.failures+1, prev.since
	}
	p.next = now.Add(k.backoff(p.failures))
	k.pending[id] = p
	k.bump++
	k.lastErr = err
	n := len(k.pending)
	k.mu.Unlock()
	if prev == nil {
		k.log().Error("auth-broker could not persist refreshed credential; serving it from memory and retrying",
			"id", id, "provider", rec.Provider, "error", err.Error(), "pendingWrites", n)
	} else {
		k.log().Debug("auth-broker refreshed credential still not persisted", "id", id, "provider", rec.Provider, "attempts", p.failures, "error", err.Error())
	}
	k.signal()
	k.changed()
	return served(rec, fresh, now), nil
}

// served is rec as the Keeper serves it while fresh is pending.
func served(rec vault.Record, fresh vault.Credential, now time.Time) vault.Record {
	rec.Credential = fresh
	rec.IdentityKey = vault.IdentityKey(rec.Provider, fresh)
	if now.After(rec.UpdatedAt) {
		rec.UpdatedAt = now
	}
	return rec
}

// settle removes the pending write of id after a write-back decided it:
// landed (reason "") or dropped (reason says why). It is a no-op when id has
// nothing pending. Callers hold wmu.
func (k *Keeper) settle(id int64, p *pendingWrite, reason string) {
	k.mu.Lock()
	cur := k.pending[id]
	if cur == nil || (p != nil && cur != p) {
		k.mu.Unlock()
		return
	}
	delete(k.pending, id)
	k.bump++
	n := len(k.pending)
	k.mu.Unlock()
	if reason == "" {
		k.log().Info("auth-broker refreshed credential persisted", "id", id, "provider", cur.provider,
			"attempts", cur.failures+1, "after", time.Since(cur.since).Round(time.Millisecond).String(), "pendingWrites", n)
	} else {
		k.log().Info("auth-broker pending refreshed credential dropped; a newer state of the row wins", "id", id, "provider", cur.provider,
			"reason", reason, "pendingWrites", n)
	}
	k.changed()
}

// wrote records that a write reached the vault: it is writable again.
func (k *Keeper) wrote() {
	k.mu.Lock()
	k.lastErr = nil
	k.mu.Unlock()
}

// Pending reports how many refreshed credentials are not persisted yet.
func (k *Keeper) Pending() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pending)
}

// WriteError returns the last write failure while the vault has not taken a
// write since, nil when it is writable (as far as the Keeper knows).
func (k *Keeper) WriteError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}

// prune drops the pending values whose row is no longer active or no longer
// holds the credential their refresh started from.
func (k *Keeper) prune(ctx context.Context) {
	if k.Pending() == 0 {
		return
	}
	k.wmu.Lock()
	defer k.wmu.Unlock()
	for id, p := range k.snapshot() {
		rec, err := k.Store.Get(ctx, id)
		switch {
		case vault.ErrorCode(err) == vault.ENOTFOUND || (err == nil && !rec.Active()):
			k.settle(id, p, "row disabled")
		case err == nil && !rec.Credential.Equal(p.from):
			k.settle(id, p, "row replaced by a newer credential")
		}
	}
}

func (k *Keeper) snapshot() map[int64]*pendingWrite {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[int64]*pendingWrite, len(k.pending))
	for id, p := range k.pending {
		out[id] = p
	}
	return out
}

// Run retries pending writes until ctx ends or Close is called. It returns
// nil; Close makes the final attempt (after every refresh has finished).
func (k *Keeper) Run(ctx context.Context) error {
	k.mu.Lock()
	k.init()
	if k.closed || k.done != nil {
		k.mu.Unlock()
		return errors.New("refresh: Keeper.Run called twice or after Close")
	}
	done := make(chan struct{})
	k.done = done
	wake, stop := k.wake, k.stop
	k.mu.Unlock()
	defer close(done)

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Go ≥ 1.23 timers: Reset and Stop discard a pending tick.
		var tc <-chan time.Time
		if due, ok := k.nextDue(); ok {
			timer.Reset(max(time.Until(due), 0))
			tc = timer.C
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-wake:
		case <-tc:
			k.retry(time.Now(), false)
		}
	}
}

// nextDue returns the earliest next attempt.
func (k *Keeper) nextDue() (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var due time.Time
	for _, p := range k.pending {
		if due.IsZero() || p.next.Before(due) {
			due = p.next
		}
	}
	return due, !due.IsZero()
}

// retry attempts every pending write due at now (all of them when final).
func (k *Keeper) retry(now time.Time, final bool) {
	for id, p := range k.snapshot() {
		if final || !p.next.After(now) {
			k.attempt(id, p, final)
		}
	}
}

// attempt is one compare-and-set write of p.
func (k *Keeper) attempt(id int64, p *pendingWrite, final bool) {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	k.mu.Lock()
	current := k.pending[id] == p
	k.mu.Unlock()
	if !current {
		return // landed, dropped or replaced meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.writeTimeout())
	defer cancel()
	rec, err := k.Store.Get(ctx, id)
	switch {
	case vault.ErrorCode(err) == vault.ENOTFOUND || (err == nil && !rec.Active()):
		k.settle(id, p, "row disabled")
		return
	case err == nil && !rec.Credential.Equal(p.from):
		k.settle(id, p, "row replaced by a newer credential")
		return
	case err == nil:
		_, err = k.Store.UpdateCredential(ctx, id, p.fresh)
		if err == nil {
			k.wrote()
			k.settle(id, p, "")
			return
		}
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			k.settle(id, p, "row disabled")
			return
		}
	}
	k.failure()
	k.mu.Lock()
	p.failures++
	p.next = time.Now().Add(k.backoff(p.failures))
	k.lastErr = err
	k.mu.Unlock()
	if final {
		k.log().Error("auth-broker refreshed credential not persisted at shutdown; its replaced refresh token is all the vault holds",
			"id", id, "provider", p.provider, "attempts", p.failures, "error", err.Error())
		return
	}
	k.log().Debug("auth-broker refreshed credential still not persisted", "id", id, "provider", p.provider, "attempts", p.failures, "error", err.Error())
}

// Close stops Run, waits for it, tries every pending write once more and
// closes the Store. Call it after the refresher has stopped.
func (k *Keeper) Close() error {
	k.mu.Lock()
	k.init()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	close(k.stop)
	done := k.done
	k.mu.Unlock()
	if done != nil {
		<-done
	}
	k.retry(time.Now(), true)
	return k.Store.Close()
}

// backoff is the jittered delay after the n-th failed attempt: the doubling
// delay d = MinBackoff·2^(n-1), capped at MaxBackoff, then d/2 + Rand()·d/2.
func (k *Keeper) backoff(n int) time.Duration {
	lo, hi := orDefault(k.MinBackoff, DefaultMinBackoff), orDefault(k.MaxBackoff, DefaultMaxBackoff)
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	r := rand.Float64
	if k.Rand != nil {
		r = k.Rand
	}
	return d/2 + time.Duration(r()*float64(d/2))
}

func (k *Keeper) writeTimeout() time.Duration { return orDefault(k.WriteTimeout, DefaultWriteTimeout) }

// init allocates the maps and channels; callers hold mu.
func (k *Keeper) init() {
	if k.pending == nil {
		k.pending = map[int64]*pendingWrite{}
		k.wake = make(chan struct{}, 1)
		k.stop = make(chan struct{})
	}
}

func (k *Keeper) signal() {
	k.mu.Lock()
	k.init()
	wake := k.wake
	k.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

func (k *Keeper) failure() {
	if k.OnWriteFailure != nil {
		k.OnWriteFailure()
	}
}

func (k *Keeper) changed() {
	if k.OnChange != nil {
		k.OnChange()
	}
}

func (k *Keeper) log() *slog.Logger {
	if k.Logger != nil {
		return k.Logger
	}
	return slog.New(slog.DiscardHandler)
}

var _ vault.Store = (*Keeper)(nil)
