package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Group commit. Every write of this Store is an op in one queue. The first
// caller to find no leader becomes the leader: it takes every queued op (up
// to maxBatch) and runs them in ONE BEGIN IMMEDIATE transaction, each under
// its own SAVEPOINT, so an op that fails (validation, not found) rolls back
// only itself; one COMMIT — one fsync with synchronous=FULL — then makes the
// whole batch durable, and only then does any caller in it return. While a
// leader waits for its fsync, new ops queue and form the next batch, whose
// leader is the first of them (leadership is handed over, so no caller runs
// other callers' batches for long).
//
// Generation: the batch advances the generation by the number of its ops
// that changed credentials, in one UPDATE of the same transaction, so the
// counter moves exactly as if the ops had committed one by one and every
// changed op observes an advance. OnChange runs once per such batch, after
// the commit.
//
// Ops that must not share a transaction (SetKeyring switches the keyring
// mid-transaction; Retire calls out under the lock) are solo: a batch of
// their own.

// maxBatch bounds the ops of one transaction so one batch cannot hold the
// write lock for long.
const maxBatch = 64

// maxLockWait bounds how long a write waits for the vault's write lock
// when other processes (a rekey, the CLI) keep taking it. SQLite's own busy
// handler (busy_timeout) polls ever more rarely and can starve behind a
// writer that commits back to back; beginImmediate retries on top of it.
const maxLockWait = 30 * time.Second

// wtx is one write transaction as the ops see it.
type wtx struct {
	*sql.Conn
	v *view
	// noBump, set by an op, keeps its change from advancing the generation
	// (a block post that raised nothing). Reset
	// before each op.
	noBump bool
}

// opFunc does the work of one op and reports whether it changed anything.
type opFunc func(ctx context.Context, w *wtx) (changed bool, err error)

type op struct {
	fn   opFunc
	bump bool // advance the generation when fn changed something
	sync bool // sync the keyring with the vault first (all but SetKeyring)
	solo bool // run in a transaction of its own

	changed bool
	err     error
	wake    chan bool // true: lead the next batch; false: result is ready
}

// do queues o and returns once the batch holding it has committed or
// failed.
func (s *Store) do(o *op) {
	o.wake = make(chan bool, 1)
	s.qmu.Lock()
	s.queue = append(s.queue, o)
	lead := !s.leading
	s.leading = true
	s.qmu.Unlock()
	if !lead {
		if !<-o.wake {
			return
		}
	}
	s.lead()
	<-o.wake
}

// lead runs one batch from the head of the queue, then hands leadership to
// the next queued op (or gives it up) and wakes the batch's callers.
func (s *Store) lead() {
	s.qmu.Lock()
	n := 1
	if !s.queue[0].solo {
		for n < len(s.queue) && n < maxBatch && !s.queue[n].solo {
			n++
		}
	}
	batch := s.queue[:n:n]
	s.queue = s.queue[n:]
	s.qmu.Unlock()

	notify := s.runBatch(batch)

	s.qmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].wake <- true
	} else {
		s.leading = false
		s.queue = nil
	}
	s.qmu.Unlock()
	// OnChange runs with no lock or connection held and no longer as the
	// leader, so it may itself read or write the vault; the batch's callers
	// return after it, as they did when each write committed alone.
	if notify && s.onChange != nil {
		s.onChange()
	}
	for _, o := range batch {
		o.wake <- false
	}
}

// runBatch runs ops in one transaction and sets each op's result. It
// reports whether the commit advanced the generation (OnChange is due).
func (s *Store) runBatch(ops []*op) (notify bool) {
	ctx := context.Background()
	fail := func(err error) {
		for _, o := range ops {
			o.changed, o.err = false, err
		}
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		fail(storageError(fmt.Errorf("begin: %w", err)))
		return
	}
	defer conn.Close()
	if err := beginImmediate(ctx, conn); err != nil {
		fail(storageError(fmt.Errorf("begin: %w", err)))
		return
	}
	done := false
	defer func() {
		if !done {
			conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	gen0, err := getMeta[int64](ctx, conn, metaGeneration)
	if errors.Is(err, sql.ErrNoRows) {
		gen0, err = 0, nil // a new vault: Open's first transaction sets it
	}
	if err != nil {
		fail(storageError(fmt.Errorf("read generation: %w", err)))
		return
	}
	w := &wtx{Conn: conn, v: &view{s: s, q: conn, gen0: gen0}}
	if ops[0].sync { // solo ops are alone; a batch of many all sync
		if err := s.syncKeyring(ctx, conn); err != nil {
			fail(storageError(err))
			return
		}
	}
	bumps := 0
	for _, o := range ops {
		if _, err := conn.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			fail(storageError(fmt.Errorf("savepoint: %w", err)))
			return
		}
		w.noBump = false
		o.changed, o.err = runOp(ctx, o, w)
		if o.err != nil || !o.changed {
			w.v.rollback()
			if _, err := conn.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				// SQLite rolled the whole transaction back (it may on
				// SQLITE_FULL or an I/O error): every op of the batch fails.
				cause := o.err
				if cause == nil {
					cause = err
				}
				fail(storageError(cause))
				return
			}
		} else {
			w.v.release()
			if o.bump && !w.noBump {
				bumps++
			}
		}
		if _, err := conn.ExecContext(ctx, "RELEASE op"); err != nil {
			fail(storageError(fmt.Errorf("release savepoint: %w", err)))
			return
		}
		o.err = storageError(o.err)
	}
	gen1, bump := gen0+int64(bumps), bumps > 0
	if bump {
		if _, err := conn.ExecContext(ctx, "UPDATE meta SET value = value + ? WHERE key = ?", bumps, metaGeneration); err != nil {
			fail(storageError(fmt.Errorf("advance generation: %w", err)))
			return
		}
		s.cmu.Lock()
		s.pendGen, s.pendDone = gen1, make(chan struct{})
		s.cmu.Unlock()
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	done = err == nil
	if err != nil {
		s.cmu.Lock()
		s.active = nil // the outcome is uncertain: reload on next use
		s.cmu.Unlock()
	} else {
		s.applyView(w.v, gen1)
	}
	if bump {
		s.cmu.Lock()
		close(s.pendDone)
		s.pendGen, s.pendDone = 0, nil
		s.cmu.Unlock()
	}
	if err != nil {
		fail(storageError(fmt.Errorf("commit: %w", err)))
		return false
	}
	return bump
}

// beginImmediate takes the vault's write lock, waiting up to maxLockWait
// while other connections hold it.
//
// Why not busy_timeout alone: SQLite's busy handler sleeps 1, 2, 5 … 100 ms
// between attempts, so a writer that waits behind another process's writes
// committing back to back (a rekey's re-seal batches, a broker's refresh
// write-backs) keeps missing the short gaps between them, and after
// busy_timeout it fails with SQLITE_BUSY. Here the connection's busy handler
// is cut to a few ms for BEGIN and the retry naps 1–4 ms with jitter, so a
// waiting writer gets the lock within a few of the other side's commits.
func beginImmediate(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 5"); err != nil {
		return err
	}
	defer conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.Itoa(busyTimeoutMs))
	deadline := time.Now().Add(maxLockWait)
	for {
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Duration(1+rand.IntN(4)) * time.Millisecond)
	}
}

// runOp runs o's function. A panic fails only o: the leader must go on to
// hand over leadership and wake the batch's callers, or every later write of
// the store would wait forever (an HTTP server recovers a handler's panic).
func runOp(ctx context.Context, o *op, w *wtx) (changed bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			changed, err = false, fmt.Errorf("vault write panicked: %v", p)
		}
	}()
	return o.fn(ctx, w)
}
