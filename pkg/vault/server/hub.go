package server

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// shared is the redacted snapshot of one vault generation, encoded once and
// shared by every request and stream subscriber. It is immutable once
// published, except that done is closed when a newer snapshot replaces it
// and that index and renders are built on first use.
type shared struct {
	seq       uint64 // build sequence number (unique per hub)
	baseSeq   uint64 // seq of the snapshot delta was computed against (0: none)
	gen       int64
	builtAt   int64 // epoch ms: serverNowMs of its stream delta frames
	sched     vault.Schedule
	refresher []byte // encoded RefresherSchedule at builtAt
	entries   []encodedEntry
	ascending bool // entries ascend by id (as the store lists them)
	// index maps id → position in entries when they do not ascend, built
	// on the first lookup that needs it (find).
	index     map[int64]int
	indexOnce sync.Once
	delta     []byte        // pre-encoded entry/removed frames from the base snapshot (15.x shape)
	deltaFull []byte        // the same for shapeFull readers (extension fields and blocks)
	ext       bool          // some entry has extension fields or blocks
	done      chan struct{} // closed when superseded
	// renders are the encoded credentials arrays per reader shape, built
	// on first use (renderFor).
	renders  [shapeFull + 1]atomic.Pointer[render]
	renderMu sync.Mutex // serialises render builds
}

// hub owns the current shared snapshot. Requests and Run call sync, which
// rebuilds and publishes a snapshot only when the vault generation moved;
// subscribers wait on the done channel of the snapshot they hold, so a
// publication is one close() whatever the number of subscribers and never
// blocks the publisher.
type hub struct {
	store    vault.Store
	blocks   vault.BlockStore // nil: entries carry no blocks
	schedule func() vault.Schedule
	now      func() time.Time
	log      *slog.Logger
	metrics  Observer

	mu  sync.Mutex // serialises rebuilds; guards seq
	seq uint64
	cur atomic.Pointer[shared]
}

// current returns the published snapshot, nil before the first sync.
func (h *hub) current() *shared { return h.cur.Load() }

// sync returns the snapshot of the vault's current generation, rebuilding
// and publishing it when the generation changed since the last build.
func (h *hub) sync(ctx context.Context) (*shared, error) {
	gen, err := h.store.Generation(ctx)
	if err != nil {
		return nil, fmt.Errorf("read vault generation: %w", err)
	}
	if cur := h.cur.Load(); cur != nil && cur.gen == gen {
		return cur, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Label the build with a generation read (under the lock) before the
	// rows: the rows are then at least as new as the label, and a later write
	// shows up as a newer generation on the next sync.
	if gen, err = h.store.Generation(ctx); err != nil {
		return nil, fmt.Errorf("read vault generation: %w", err)
	}
	cur := h.cur.Load()
	if cur != nil && cur.gen == gen {
		return cur, nil // rebuilt by someone else meanwhile
	}
	var blocks map[int64][]vault.CredentialBlock
	if h.blocks != nil {
		if blocks, err = h.blocks.Blocks(ctx, h.now().UnixMilli()); err != nil {
			return nil, fmt.Errorf("list credential blocks: %w", err)
		}
	}
	// Walk, not List: the build keeps only encodings, so the records need
	// not be copied out of the store.
	b := h.newBuilder(gen, blocks, cur)
	if err := h.store.Walk(ctx, "", b.add); err != nil {
		return nil, fmt.Errorf("list vault: %w", err)
	}
	next := b.finish()
	h.cur.Store(next)
	if cur != nil {
		close(cur.done)
	}
	if h.metrics != nil {
		h.metrics.SnapshotPublished(gen, Published{next})
	}
	return next, nil
}

// builder encodes the snapshot of one generation record by record (with
// their blocks, keyed by id), reusing prev's encodings of what did not
// change.
type builder struct {
	h      *hub
	sh     *shared
	prev   *shared // nil: none
	blocks map[int64][]vault.CredentialBlock
	now    int64
	hint   int // where prev holds the next record's entry when both ascend by id
}

func (h *hub) newBuilder(gen int64, blocks map[int64][]vault.CredentialBlock, prev *shared) *builder {
	now := h.now().UnixMilli()
	sched := h.schedule()
	h.seq++
	size := 0
	if prev != nil {
		size = len(prev.entries) + 1
	}
	return &builder{h: h, prev: prev, blocks: blocks, now: now, sh: &shared{
		seq: h.seq, gen: gen, builtAt: now, sched: sched,
		refresher: appendRefresher(nil, sched.Wire(now)),
		entries:   make([]encodedEntry, 0, size),
		done:      make(chan struct{}),
		ascending: true,
	}}
}

// add encodes r as the next entry; r is not kept.
func (b *builder) add(r *vault.Record) {
	sh := b.sh
	var old *encodedEntry
	if b.prev != nil {
		if j, ok := b.prev.find(r.ID, b.hint); ok {
			old, b.hint = &b.prev.entries[j], j+1
		}
	}
	// Most rows are unchanged since prev: reuse their encoding, so a
	// write costs one encoding, not one per stored credential.
	e, err := encodeRecord(r, old)
	if err != nil {
		b.h.log.Warn("auth-broker snapshot skipped credential", "id", r.ID, "provider", r.Provider, "error", err.Error())
		return
	}
	if ms, ok := e.rotatesInMs(sh.sched, b.now); ok {
		e.rotates, e.target = true, b.now+ms
	}
	var prevBlk *entryBlocks
	if old != nil {
		prevBlk = old.blk
	}
	e.blk = newEntryBlocks(vault.LiveBlocks(b.blocks[r.ID], b.now), prevBlk)
	if n := len(sh.entries); n > 0 && sh.entries[n-1].id >= e.id {
		sh.ascending = false
	}
	sh.entries = append(sh.entries, e)
	sh.ext = sh.ext || (e.src != nil && e.src.full != nil) || e.blk != nil
}

// finish computes the delta frames from prev and returns the snapshot.
func (b *builder) finish() *shared {
	sh, prev := b.sh, b.prev
	if prev != nil {
		sh.baseSeq = prev.seq
		sh.delta = diff(nil, prev, sh, shape15, b.h.log)
		sh.deltaFull = sh.delta
		if sh.ext || prev.ext {
			sh.deltaFull = diff(nil, prev, sh, shapeFull, nil)
		}
	}
	return sh
}

// find returns the position of id in sh.entries. hint is where the caller
// expects it: a caller walking rows in id order finds each one right after
// the previous match. When the hint misses, a binary search finds it in
// entries that ascend by id, the index in any others.
func (sh *shared) find(id int64, hint int) (int, bool) {
	if hint < len(sh.entries) && sh.entries[hint].id == id {
		return hint, true
	}
	if sh.ascending {
		return slices.BinarySearchFunc(sh.entries, id, func(e encodedEntry, id int64) int { return cmp.Compare(e.id, id) })
	}
	sh.indexOnce.Do(func() {
		sh.index = make(map[int64]int, len(sh.entries))
		for i := range sh.entries {
			sh.index[sh.entries[i].id] = i
		}
	})
	j, ok := sh.index[id]
	return j, ok
}

// sameEntry compares the stream fingerprint of two entries as a reader of
// the given shape sees them: id, provider, identityKey and credential (all
// inside the encoded prefix), the absolute rotation target and the blocks.
func sameEntry(a, b *encodedEntry, sp shape) bool {
	return a.rotates == b.rotates && (!a.rotates || a.target == b.target) && bytes.Equal(a.pfx(sp.ext()), b.pfx(sp.ext())) &&
		bytes.Equal(a.blk.enc(sp), b.blk.enc(sp))
}

// diff appends the frames that take a subscriber from old to cur: `entry`
// frames for new or changed credentials in cur's order, then `removed`
// frames in old's order, in the reader's shape. log (optional) receives the
// per-frame debug lines.
func diff(dst []byte, old, cur *shared, sp shape, log *slog.Logger) []byte {
	debug := log != nil && log.Enabled(context.Background(), slog.LevelDebug)
	hint := 0
	for i := range cur.entries {
		e := &cur.entries[i]
		if j, ok := old.find(e.id, hint); ok {
			hint = j + 1
			if sameEntry(&old.entries[j], e, sp) {
				continue
			}
		}
		dst = appendEntryFrame(dst, cur, e, sp)
		if debug {
			log.Debug("auth-broker stream entry", "id", e.id, "provider", e.provider, "generation", cur.gen)
		}
	}
	hint = 0
	for i := range old.entries {
		id := old.entries[i].id
		if j, ok := cur.find(id, hint); ok {
			hint = j + 1
			continue
		}
		dst = appendRemovedFrame(dst, cur, id)
		if debug {
			log.Debug("auth-broker stream removed", "id", id, "generation", cur.gen)
		}
	}
	return dst
}

// framesSince returns the frames a subscriber holding last needs to reach
// latest: the shared delta when it is exactly one publication behind (15.x
// and shapeFull readers), otherwise its own diff.
func framesSince(last, latest *shared, sp shape) []byte {
	if latest.baseSeq == last.seq && sp != shapeShared {
		if sp == shapeFull {
			return latest.deltaFull
		}
		return latest.delta
	}
	return diff(nil, last, latest, sp, nil)
}

// bufPool recycles response buffers of snapshot renders.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 8<<20 {
		return // do not keep outsized buffers
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
