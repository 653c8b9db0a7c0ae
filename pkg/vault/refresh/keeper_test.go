package refresh

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/pkg/vault"
)

var errFull = &vault.Error{Code: vault.EUNAVAILABLE, Message: "vault storage is full"}

// flakyStore fails the next `fail` UpdateCredential calls with errFull
// (forever when fail < 0) and counts the calls.
type flakyStore struct {
	vault.Store
	mu    sync.Mutex
	fail  int
	calls int
}

func (s *flakyStore) UpdateCredential(ctx context.Context, id int64, cred vault.Credential) (vault.Record, error) {
	s.mu.Lock()
	s.calls++
	failing := s.fail != 0
	if s.fail > 0 {
		s.fail--
	}
	s.mu.Unlock()
	if failing {
		return vault.Record{}, errFull
	}
	return s.Store.UpdateCredential(ctx, id, cred)
}

func (s *flakyStore) set(fail int) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

func (s *flakyStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// flaky puts a flakyStore under the fixture's Keeper, with millisecond
// backoff, and returns it with a channel signalled on every pending-set
// change.
func (f *fixture) flaky(fail int) (*flakyStore, <-chan struct{}) {
	fl := &flakyStore{Store: f.store, fail: fail}
	changes := make(chan struct{}, 64)
	f.keep.Store = fl
	f.keep.MinBackoff, f.keep.MaxBackoff = time.Millisecond, 4*time.Millisecond
	f.keep.OnChange = func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	return fl, changes
}

// runKeeper runs the fixture's Keeper until the test ends.
func (f *fixture) runKeeper(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.keep.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// settled waits until nothing is pending.
func (f *fixture) settled(t *testing.T, changes <-chan struct{}) {
	t.Helper()
	for f.keep.Pending() > 0 {
		receive(t, changes, "the pending write to settle")
	}
}

func TestFailedWriteBackServesFreshCredentialAndRetriesUntilItLands(t *testing.T) {
	f := newFixture(t)
	const n = 5
	fl, changes := f.flaky(n)
	var failures atomic.Int64
	f.keep.OnWriteFailure = func() { failures.Add(1) }
	ctx := context.Background()
	id := f.add(t, "anthropic", "full@x", "r1", t0.Add(time.Hour).UnixMilli())
	genBefore, _ := f.keep.Generation(ctx)

	rec, err := f.r.RefreshNow(ctx, id)
	if err != nil {
		t.Fatalf("RefreshNow with a failing write = %v, want success (the token is valid)", err)
	}
	if rec.Credential.Refresh != "r1'" || rec.Credential.Access != "acc-r1" {
		t.Fatalf("refresh answered refresh=%q access=%q", rec.Credential.Refresh, rec.Credential.Access)
	}
	if got := f.get(t, id).Credential.Refresh; got != "r1" {
		t.Fatalf("store already holds %q", got)
	}
	served, err := f.keep.Get(ctx, id)
	if err != nil || served.Credential.Refresh != "r1'" || served.IdentityKey != "email:full@x" {
		t.Fatalf("Keeper.Get = %+v, %v; want the fresh credential", served.Credential.Refresh, err)
	}
	list, _ := f.keep.List(ctx, "")
	if len(list) != 1 || list[0].Credential.Access != "acc-r1" {
		t.Fatalf("Keeper.List serves %+v", list)
	}
	var walked []vault.Record
	if err := f.keep.Walk(ctx, "anthropic", func(r *vault.Record) { walked = append(walked, *r) }); err != nil ||
		len(walked) != 1 || walked[0].Credential.Access != "acc-r1" || walked[0].IdentityKey != "email:full@x" {
		t.Fatalf("Keeper.Walk serves %+v, %v", walked, err)
	}
	if gen, _ := f.keep.Generation(ctx); gen <= genBefore {
		t.Errorf("generation %d did not move from %d: the hub would not republish", gen, genBefore)
	}
	if f.keep.Pending() != 1 || vault.ErrorMessage(f.keep.WriteError()) != "vault storage is full" {
		t.Errorf("Pending = %d, WriteError = %v", f.keep.Pending(), f.keep.WriteError())
	}

	// A second forced refresh while the write is pending spends the NEW token.
	rec, err = f.r.RefreshNow(ctx, id)
	if err != nil || rec.Credential.Refresh != "r1''" {
		t.Fatalf("second RefreshNow = %q, %v", rec.Credential.Refresh, err)
	}

	f.runKeeper(t)
	f.settled(t, changes)

	if got := f.get(t, id).Credential; got.Refresh != "r1''" || got.Access != "acc-r1'" {
		t.Fatalf("stored refresh=%q access=%q after the retries", got.Refresh, got.Access)
	}
	if fl.count() != n+1 || failures.Load() != n {
		t.Errorf("UpdateCredential calls = %d, failures = %d; want %d and %d", fl.count(), failures.Load(), n+1, n)
	}
	if f.keep.WriteError() != nil {
		t.Errorf("WriteError after landing = %v", f.keep.WriteError())
	}
	// The next refresh spends the newest token: the replaced ones never reappear.
	if _, err := f.r.RefreshNow(ctx, id); err != nil {
		t.Fatal(err)
	}
	f.fp.mu.Lock()
	seen := strings.Join(f.fp.seen, ",")
	f.fp.mu.Unlock()
	if seen != "r1,r1',r1''" {
		t.Errorf("refresh tokens presented = %s, want each once, newest last", seen)
	}
	logs := f.logs.String()
	if c := strings.Count(logs, "level=ERROR"); c != 1 {
		t.Errorf("%d ERROR lines, want exactly 1:\n%s", c, logs)
	}
	if !strings.Contains(logs, `level=ERROR msg="auth-broker could not persist refreshed credential; serving it from memory and retrying" id=`+itoa(id)+` provider=anthropic error="vault storage is full"`) {
		t.Errorf("missing or wrong ERROR line:\n%s", logs)
	}
	if c := strings.Count(logs, `level=INFO msg="auth-broker refreshed credential persisted"`); c != 1 {
		t.Errorf("%d landed INFO lines, want 1:\n%s", c, logs)
	}
	if strings.Contains(logs, "acc-") {
		t.Errorf("logs leak a token:\n%s", logs)
	}
}

func TestPendingWriteLosesToANewerCredential(t *testing.T) {
	for _, how := range []string{"upload through the keeper", "write by another process", "disabled"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			fl, changes := f.flaky(-1)
			ctx := context.Background()
			id := f.add(t, "anthropic", "cas@x", "r1", t0.Add(time.Hour).UnixMilli())
			if _, err := f.r.RefreshNow(ctx, id); err != nil {
				t.Fatal(err)
			}
			newer := vault.Credential{Type: vault.TypeOAuth, Access: "acc-login", Refresh: "r-login", Expires: t0.Add(2 * time.Hour).UnixMilli(), Email: "cas@x"}
			switch how {
			case "upload through the keeper":
				if _, err := f.keep.Upsert(ctx, "anthropic", newer); err != nil {
					t.Fatal(err)
				}
				if f.keep.Pending() != 0 {
					t.Fatal("the upload did not drop the pending value")
				}
			case "write by another process":
				if _, err := f.store.Upsert(ctx, "anthropic", newer); err != nil {
					t.Fatal(err)
				}
			case "disabled":
				if err := f.store.Disable(ctx, id, "test"); err != nil {
					t.Fatal(err)
				}
			}
			// The newer state is served at once, pending or not.
			rec, err := f.keep.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if how == "disabled" {
				if rec.Active() {
					t.Fatal("disabled row served as active")
				}
			} else if rec.Credential.Refresh != "r-login" {
				t.Fatalf("served refresh %q, want the newer upload", rec.Credential.Refresh)
			}
			fl.set(0) // the vault is writable again
			f.runKeeper(t)
			f.settled(t, changes)
			stored := f.get(t, id)
			if how == "disabled" {
				if stored.Active() || stored.Credential.Refresh != "r1" {
					t.Errorf("a disabled row was written: active=%v refresh=%q", stored.Active(), stored.Credential.Refresh)
				}
			} else if stored.Credential.Refresh != "r-login" {
				t.Errorf("stored refresh %q: the retried write overwrote the newer credential", stored.Credential.Refresh)
			}
			if !strings.Contains(f.logs.String(), `level=INFO msg="auth-broker pending refreshed credential dropped; a newer state of the row wins" id=`+itoa(id)) {
				t.Errorf("missing drop INFO line:\n%s", f.logs.String())
			}
		})
	}
}

func TestDefinitiveFailureOfAPendingCredentialDisablesTheRow(t *testing.T) {
	f := newFixture(t)
	f.flaky(-1)
	ctx := context.Background()
	id := f.add(t, "anthropic", "dead@x", "r1", t0.Add(time.Hour).UnixMilli())
	if _, err := f.r.RefreshNow(ctx, id); err != nil {
		t.Fatal(err)
	}
	f.fp.setReply(status(400, `{"error":"invalid_grant"}`))
	if _, err := f.r.RefreshNow(ctx, id); err == nil {
		t.Fatal("RefreshNow succeeded")
	}
	if rec := f.get(t, id); rec.Active() {
		t.Errorf("row still active: the CAS compared the served credential with the stored one")
	}
	if f.keep.Pending() != 0 {
		t.Errorf("pending value of a disabled row kept")
	}
	f.fp.mu.Lock()
	defer f.fp.mu.Unlock()
	if strings.Join(f.fp.seen, ",") != "r1,r1'" {
		t.Errorf("refresh tokens presented = %v", f.fp.seen)
	}
}

func TestRefreshOfARowDisabledBeforeWriteBackIsNotFound(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.add(t, "anthropic", "gone@x", "r1", t0.Add(time.Hour).UnixMilli())
	f.fp.setReply(func(w http.ResponseWriter, r *http.Request, refresh string) {
		if err := f.store.Disable(ctx, id, "test"); err != nil {
			t.Error(err)
		}
		rotate(3600)(w, r, refresh)
	})
	if _, err := f.r.RefreshNow(ctx, id); vault.ErrorCode(err) != vault.ENOTFOUND {
		t.Fatalf("err = %v, want ENOTFOUND", err)
	}
	if f.keep.Pending() != 0 {
		t.Error("kept a credential for a disabled row")
	}
}

// memStore is an in-memory vault.Store with one row (id 1) for synctest
// bubbles; only the methods the Keeper's retry path uses are implemented.
type memStore struct {
	vault.Store
	mu       sync.Mutex
	rec      vault.Record
	gen      int64
	fail     int // fail the next fail UpdateCredential calls (< 0: always)
	attempts []time.Time
	closed   bool
}

func newMemStore(fail int) *memStore {
	return &memStore{fail: fail, gen: 1, rec: vault.Record{ID: 1, Provider: "anthropic",
		Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a0", Refresh: "r0", Email: "m@x"}}}
}

func (s *memStore) Get(_ context.Context, id int64) (vault.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.rec.ID {
		return vault.Record{}, vault.NotFoundID(id)
	}
	return s.rec, nil
}

func (s *memStore) UpdateCredential(_ context.Context, id int64, cred vault.Credential) (vault.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, time.Now())
	if s.fail != 0 {
		if s.fail > 0 {
			s.fail--
		}
		return vault.Record{}, errFull
	}
	s.rec.Credential = cred
	s.gen++
	return s.rec, nil
}

func (s *memStore) Generation(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, nil
}

func (s *memStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *memStore) stored() vault.Credential {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Credential
}

var fresh1 = vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", Email: "m@x"}

func TestKeeperBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const failures = 13
		st := newMemStore(failures)
		k := &Keeper{Store: st, Rand: func() float64 { return 0.5 }} // jitter: 3/4 of the doubling delay
		ctx, cancel := context.WithCancel(t.Context())
		rec, _ := st.Get(ctx, 1)
		if _, err := k.Put(ctx, rec, fresh1); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = k.Run(ctx); close(done) }()
		time.Sleep(time.Hour) // fake time: every retry runs
		synctest.Wait()

		if k.Pending() != 0 || st.stored().Refresh != "r1" {
			t.Fatalf("pending %d, stored %q", k.Pending(), st.stored().Refresh)
		}
		if len(st.attempts) != failures+1 {
			t.Fatalf("%d attempts, want %d", len(st.attempts), failures+1)
		}
		for i := 1; i < len(st.attempts); i++ {
			d := min(100*time.Millisecond<<(i-1), 30*time.Second)
			if got, want := st.attempts[i].Sub(st.attempts[i-1]), d*3/4; got != want {
				t.Errorf("delay before attempt %d = %v, want %v", i+1, got, want)
			}
		}
		cancel()
		<-done
	})
}

func TestKeeperBackoffJitterBounds(t *testing.T) {
	for _, tt := range []struct {
		n      int
		r      float64
		lo, hi time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 50 * time.Millisecond},
		{1, 0.999999, 50 * time.Millisecond, 100 * time.Millisecond},
		{4, 0, 400 * time.Millisecond, 400 * time.Millisecond},
		{40, 0.999999, 15 * time.Second, 30 * time.Second},
		{1000, 0, 15 * time.Second, 15 * time.Second},
	} {
		k := &Keeper{Rand: func() float64 { return tt.r }}
		if got := k.backoff(tt.n); got < tt.lo || got > tt.hi {
			t.Errorf("backoff(%d) with rand %v = %v, want in [%v, %v]", tt.n, tt.r, got, tt.lo, tt.hi)
		}
	}
	k := &Keeper{}
	for range 100 {
		if got := k.backoff(2); got < 100*time.Millisecond || got > 200*time.Millisecond {
			t.Fatalf("backoff(2) = %v outside [100ms, 200ms]", got)
		}
	}
}

func TestKeeperNewPendingWakesTheRetryLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newMemStore(1)
		k := &Keeper{Store: st, Rand: func() float64 { return 0 }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { _ = k.Run(ctx); close(done) }()
		synctest.Wait() // Run idles with nothing pending
		start := time.Now()
		rec, _ := st.Get(ctx, 1)
		if _, err := k.Put(ctx, rec, fresh1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if k.Pending() != 0 || len(st.attempts) != 2 || st.attempts[1].Sub(start) != 50*time.Millisecond {
			t.Fatalf("pending %d, attempts %v after start %v", k.Pending(), st.attempts, start)
		}
		cancel()
		<-done
	})
}

func TestKeeperCloseTriesOnceMore(t *testing.T) {
	t.Run("lands", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := newMemStore(1)
			k := &Keeper{Store: st, MinBackoff: time.Hour}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { _ = k.Run(ctx); close(done) }()
			rec, _ := st.Get(ctx, 1)
			if _, err := k.Put(ctx, rec, fresh1); err != nil {
				t.Fatal(err)
			}
			cancel() // shutdown long before the first retry is due
			<-done
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			if st.stored().Refresh != "r1" || !st.closed || len(st.attempts) != 2 {
				t.Fatalf("stored %q closed %v attempts %d", st.stored().Refresh, st.closed, len(st.attempts))
			}
		})
	})
	t.Run("still failing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := newMemStore(-1)
			logs := &syncbuf.Buffer{}
			k := &Keeper{Store: st, MinBackoff: time.Hour, Logger: slogText(logs)}
			rec, _ := st.Get(t.Context(), 1)
			if _, err := k.Put(t.Context(), rec, fresh1); err != nil {
				t.Fatal(err)
			}
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			if len(st.attempts) != 2 {
				t.Fatalf("%d attempts, want the write and one more at Close", len(st.attempts))
			}
			if !strings.Contains(logs.String(), `level=ERROR msg="auth-broker refreshed credential not persisted at shutdown`) {
				t.Errorf("no shutdown ERROR line:\n%s", logs)
			}
		})
	})
}

func slogText(w *syncbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
