package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// What Boot applied.
const (
	_ = iota // not booted: Run fetches the first snapshot
	bootLive
	bootCache
)

// Boot gives the store its first snapshot before Run, as a broker client
// starts: from Options.Cache when it holds a fresh
// snapshot for this broker URL and token — no broker round trip; Run then
// reconciles in the background — else from GET /v1/snapshot, written to
// the cache. With Options.LiveFirst the broker is asked first and the
// cache serves only when the broker cannot be reached. fromCache tells
// which. Its error is the live fetch's: no snapshot from the broker and no
// fresh cache to stand in. Call it at most once, before Run; a store that
// is not booted fetches its first snapshot in Run.
func (s *Store) Boot(ctx context.Context) (fromCache bool, err error) {
	if s.opts.LiveFirst {
		err := s.bootLive(ctx)
		if err == nil || s.opts.Cache == nil || ctx.Err() != nil || !Unreachable(err) {
			return false, err
		}
		if !s.bootCache() {
			return false, err
		}
		s.log.Warn("auth broker unreachable; serving the snapshot cache until it answers", "error", err.Error())
		return true, nil
	}
	if s.bootCache() {
		return true, nil
	}
	return false, s.bootLive(ctx)
}

// bootCache applies the cached snapshot when Options.Cache holds a fresh
// one, and reports whether it did.
func (s *Store) bootCache() bool {
	c := s.opts.Cache
	if c == nil {
		return false
	}
	snap, err := c.Read()
	if err != nil {
		if !errors.Is(err, ErrCacheDisabled) && !errors.Is(err, ErrCacheAbsent) {
			s.log.Info("auth-broker snapshot cache not used", "reason", err.Error())
		}
		return false
	}
	s.applySnapshot(snap, true, nil)
	s.mu.Lock()
	s.status.Mode = ModeCache
	s.mu.Unlock()
	s.booted = bootCache
	s.log.Info("auth-broker snapshot loaded from cache", "generation", snap.Generation,
		"age", time.Duration(s.opts.Now().UnixMilli()-snap.GeneratedAt)*time.Millisecond, "credentials", len(snap.Credentials))
	return true
}

// bootLive applies the broker's GET /v1/snapshot.
func (s *Store) bootLive(ctx context.Context) error {
	res, err := s.opts.Client.Snapshot(ctx, nil, 0)
	if err != nil {
		return err
	}
	if res.Snapshot == nil {
		return errors.New("auth broker answered the initial snapshot without a body")
	}
	s.applySnapshot(*res.Snapshot, true, res.Raw)
	s.booted = bootLive
	return nil
}

// Unreachable reports whether err is a broker request that got no answer
// from the broker: no connection or no response, or a 5xx (the broker or
// a proxy in front of it is down). A 4xx — a rejected token above all — is
// an answer, not an outage.
func Unreachable(err error) bool {
	var be *brokerclient.Error
	if !errors.As(err, &be) {
		return false
	}
	return be.Status == 0 || be.Status >= 500
}

// Run keeps the store in sync with the broker until ctx is cancelled, then
// returns nil. Unless Boot fetched it live, it fetches the initial snapshot
// (retrying with backoff; after a boot from the cache this reconciles what
// the cache held, readers meanwhile served from it), then follows the
// stream or long-polls.
func (s *Store) Run(ctx context.Context) error {
	if c := s.opts.Cache; c != nil && c.TTL > 0 {
		renewCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { s.renewCache(renewCtx, max(c.TTL/2, time.Second)) })
		defer wg.Wait()
		defer stop()
	}
	b := backoff{}
	for s.booted != bootLive && ctx.Err() == nil {
		res, err := s.opts.Client.Snapshot(ctx, nil, 0)
		if err == nil && res.Snapshot != nil {
			s.applySnapshot(*res.Snapshot, true, res.Raw)
			break
		}
		if err == nil {
			err = errors.New("auth broker answered the initial snapshot without a body")
		}
		if !s.fail(ctx, err, &b) {
			return nil
		}
	}
	streaming := !s.opts.NoStream
	b.reset()
	for ctx.Err() == nil {
		if streaming {
			err := s.follow(ctx, &b)
			if errors.Is(err, brokerclient.ErrStreamUnsupported) {
				s.log.Info("auth broker has no snapshot stream; long-polling")
				streaming = false
				continue
			}
			if !s.fail(ctx, err, &b) {
				return nil
			}
			continue
		}
		if err := s.poll(ctx); err != nil {
			if !s.fail(ctx, err, &b) {
				return nil
			}
			continue
		}
		b.reset()
	}
	return nil
}

// renewCache applies a fresh GET /v1/snapshot every interval until ctx
// ends, which rewrites the snapshot cache: a stream sends a full snapshot
// only when it connects, and a client restarted during a broker outage
// needs a cache younger than its TTL. A failed fetch waits for the next
// interval.
func (s *Store) renewCache(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.opts.Client.Snapshot(ctx, nil, 0)
		if err != nil || res.Snapshot == nil {
			if ctx.Err() == nil && err != nil {
				s.log.Debug("auth-broker snapshot cache not renewed", "error", err.Error())
			}
			continue
		}
		s.applySnapshot(*res.Snapshot, false, res.Raw)
	}
}

// follow reads one stream connection until it ends. The backoff resets once
// the connection delivered its initial snapshot.
func (s *Store) follow(ctx context.Context, b *backoff) error {
	st, err := s.opts.Client.Stream(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	first := true
	for {
		ev, err := st.Next()
		if err != nil {
			return err
		}
		switch ev.Kind {
		case api.KindSnapshot:
			s.applySnapshot(*ev.Snapshot, first, ev.Raw)
			if first {
				s.setMode(ModeStream)
				b.reset()
			}
			first = false
		case api.KindEntry:
			s.applyEntry(ev)
		case api.KindRemoved:
			s.applyRemoved(ev)
		}
	}
}

// poll runs one long-poll for a generation newer than the held one.
func (s *Store) poll(ctx context.Context) error {
	s.mu.RLock()
	gen := s.gen
	s.mu.RUnlock()
	res, err := s.opts.Client.Snapshot(ctx, &gen, s.opts.PollWait)
	if err != nil {
		return err
	}
	s.setMode(ModePoll)
	if res.Status == http.StatusOK && res.Snapshot != nil {
		s.applySnapshot(*res.Snapshot, true, res.Raw) // a long-poll 200 applies unconditionally
	} else {
		s.mu.Lock()
		s.status.LastSync = s.opts.Now()
		s.mu.Unlock()
	}
	return nil
}

// fail records err and waits the backoff; it reports false when ctx ended.
func (s *Store) fail(ctx context.Context, err error, b *backoff) bool {
	if ctx.Err() != nil {
		return false
	}
	d := b.next()
	s.mu.Lock()
	first := s.status.LastError == ""
	s.status.LastError = err.Error()
	if s.status.Mode != ModeConnecting {
		s.status.Mode = ModeBackoff
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("auth broker sync failed; retrying", "error", err.Error(), "retry_in", d.String())
	} else {
		s.log.Debug("auth broker sync failed; retrying", "error", err.Error(), "retry_in", d.String())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Store) setMode(mode string) {
	s.mu.Lock()
	if s.status.LastError != "" {
		s.log.Info("auth broker sync restored", "mode", mode)
	}
	s.status.Mode, s.status.LastError = mode, ""
	s.mu.Unlock()
}

// applySnapshot replaces the held state with snap unless it is older than
// the held generation and force is false; an applied snapshot's raw JSON
// (nil: none, as for the cache's own) is written to the cache.
func (s *Store) applySnapshot(snap vault.Snapshot, force bool, raw []byte) {
	s.mu.Lock()
	if !force && snap.Generation < s.gen {
		s.mu.Unlock()
		return
	}
	s.gen, s.serverNow, s.refresher = snap.Generation, snap.ServerNowMs, snap.Refresher
	s.receivedAt = s.opts.Now()
	s.status.LastSync = s.receivedAt
	old := s.entries
	s.entries = make(map[int64]vault.Entry, len(snap.Credentials))
	blocksChanged := false
	for _, e := range snap.Credentials {
		if s.opts.Pool.Allows(e) {
			s.entries[e.ID] = e
			blocksChanged = blocksChanged || !slices.Equal(old[e.ID].Blocks, e.Blocks)
		}
	}
	if blocksChanged {
		// A block came or went: the 15 s usage cache may rank on stale
		// state.
		s.usage = nil
	}
	warnPool := s.opts.Pool != nil && !s.poolWarned
	s.poolWarned = true
	if s.status.Mode == ModeConnecting || s.status.Mode == ModeCache {
		s.status.Mode = ModePoll
		if !s.opts.NoStream {
			s.status.Mode = ModeStream
		}
	}
	s.mu.Unlock()
	if warnPool {
		// A mistyped key must not silently empty a provider.
		for prov, keys := range s.opts.Pool.Unmatched(snap.Credentials) {
			s.log.Warn(fmt.Sprintf("account pool for %s: no broker credential for %s", prov, strings.Join(keys, ", ")))
		}
	}
	s.readyOnce.Do(func() { close(s.ready) })
	s.changed()
	if raw != nil && s.opts.Cache != nil {
		// Written by the sync goroutine, off every reader's path; a
		// failure only costs the next boot a broker round trip.
		if err := s.opts.Cache.Write(raw); err != nil {
			s.log.Debug("auth-broker snapshot cache write failed", "error", err.Error())
		}
	}
}

func (s *Store) applyEntry(ev api.Event) {
	if !s.bump(ev) {
		return
	}
	s.mu.Lock()
	if s.opts.Pool.Allows(*ev.Entry) {
		if !slices.Equal(s.entries[ev.Entry.ID].Blocks, ev.Entry.Blocks) {
			s.usage = nil
		}
		s.entries[ev.Entry.ID] = *ev.Entry
	} else {
		delete(s.entries, ev.Entry.ID) // left the pool
	}
	s.mu.Unlock()
	s.changed()
}

func (s *Store) applyRemoved(ev api.Event) {
	if !s.bump(ev) {
		return
	}
	s.mu.Lock()
	delete(s.entries, ev.ID)
	s.mu.Unlock()
	s.changed()
}

// bump records a delta frame's bookkeeping; false when it is older than the
// held generation (ignored).
func (s *Store) bump(ev api.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Generation < s.gen {
		return false
	}
	s.gen, s.serverNow, s.refresher = ev.Generation, ev.ServerNowMs, ev.Refresher
	s.receivedAt = s.opts.Now()
	s.status.LastSync = s.receivedAt
	return true
}

// backoff is the reconnect schedule: 500 ms doubling to 30 s, jittered.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = minBackoff
	}
	d := jitter(b.d)
	b.d = min(2*b.d, maxBackoff)
	return d
}

func (b *backoff) reset() { b.d = 0 }
