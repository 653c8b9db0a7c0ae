package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// TestActiveSetSeesOtherStoresWrites: a store serving reads from memory
// still sees writes made through another Store on the same file (the CLI),
// because they advance the persisted generation.
func TestActiveSetSeesOtherStoresWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	broker, cli := e.open(t), e.open(t)
	must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))
	if got := must[[]vault.Record](t)(broker.List(ctx, "")); len(got) != 1 {
		t.Fatalf("broker lists %d", len(got))
	}
	must[[]vault.Record](t)(cli.Upsert(ctx, "anthropic", oauth("b@x.io", "r2")))
	must[vault.Record](t)(cli.UpdateCredential(ctx, 1, oauth("a@x.io", "r1b")))
	wantState(t, broker, "1 anthropic email:a@x.io r1b", "2 anthropic email:b@x.io r2")
	if got := refreshOf(t, broker, 1); got != "r1b" {
		t.Fatalf("broker Get(1) refresh = %q", got)
	}
	// The broker's next write matches against the CLI's rows, not a stale set.
	must[[]vault.Record](t)(broker.Upsert(ctx, "anthropic", oauth("b@x.io", "r3")))
	if err := cli.Disable(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	wantState(t, broker, "1 anthropic email:a@x.io r1b [disabled]", "2 anthropic email:b@x.io r3")
}

// TestRecordsDoNotAliasTheActiveSet: callers may modify what they get.
func TestRecordsDoNotAliasTheActiveSet(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	c := oauth("a@x.io", "r1")
	c.Extra = map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}
	recs := must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", c))
	c.Extra["k"][1] = 'X' // the caller's own map, after the call
	recs[0].Credential.Extra["k"][1] = 'Y'
	recs[0].Credential.Extra["new"] = json.RawMessage(`1`)
	recs[0].Credential.Refresh = "changed"
	l := must[[]vault.Record](t)(st.List(ctx, ""))
	l[0].Credential.Extra["k"][1] = 'Z'
	g := must[vault.Record](t)(st.Get(ctx, 1))
	if string(g.Credential.Extra["k"]) != `"v"` || len(g.Credential.Extra) != 1 || g.Credential.Refresh != "r1" {
		t.Fatalf("stored record changed through a returned one: %+v", g.Credential)
	}
}

// TestBatchedOpFailureFailsOnlyThatOp runs many writers at once so their
// ops share transactions: the ones that must fail (unknown ids) fail alone;
// every other op lands, each observes a generation advance, and OnChange
// runs at most once per changed op.
func TestBatchedOpFailureFailsOnlyThatOp(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var changes atomic.Int64
	st := e.open(t, func(o *sqlite.Options) { o.OnChange = func() { changes.Add(1) } })
	g0 := gen(t, st)
	const writers, each = 16, 8
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				before := gen(t, st)
				if w%4 == 3 {
					_, err := st.UpdateCredential(ctx, 10_000+int64(w), oauth("x@x.io", "r"))
					if vault.ErrorCode(err) != vault.ENOTFOUND {
						t.Errorf("UpdateCredential of a missing row = %v", err)
					}
					continue
				}
				if _, err := st.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("w%d@x.io", w), fmt.Sprintf("r%d", i))); err != nil {
					t.Error(err)
					return
				}
				if after := gen(t, st); after <= before {
					t.Errorf("generation %d after a write, %d before", after, before)
				}
			}
		})
	}
	wg.Wait()
	ok := writers - writers/4
	recs := must[[]vault.Record](t)(st.List(ctx, "anthropic"))
	if len(recs) != ok {
		t.Fatalf("%d active rows, want %d", len(recs), ok)
	}
	for _, r := range recs {
		if r.Credential.Refresh != fmt.Sprintf("r%d", each-1) {
			t.Fatalf("row %d refresh %q, want the last write", r.ID, r.Credential.Refresh)
		}
	}
	if g := gen(t, st); g != g0+int64(ok*each) {
		t.Fatalf("generation advanced by %d, want one per changed op (%d)", g-g0, ok*each)
	}
	if n := changes.Load(); n < 1 || n > int64(ok*each) {
		t.Fatalf("OnChange ran %d times for %d changed ops", n, ok*each)
	}
	t.Logf("%d changed ops committed in %d batches", ok*each, changes.Load())
}

// TestOnChangeMayWriteTheVault: OnChange runs outside the group-commit
// leader, so a hook that writes (here: the durable cache) does not wait for
// itself.
func TestOnChangeMayWriteTheVault(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var st *sqlite.Store
	hookErr := make(chan error, 1)
	st = e.open(t, func(o *sqlite.Options) {
		o.OnChange = func() {
			select {
			case hookErr <- st.SetCache(ctx, "k", []byte("v"), e.clk.Now().UnixMilli()+60_000):
			default:
			}
		}
	})
	done := make(chan error, 1)
	go func() { _, err := st.Upsert(ctx, "openai", apiKey("sk-A")); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Upsert did not return: OnChange's write waits for the write that called it")
	}
	if err := <-hookErr; err != nil {
		t.Fatalf("SetCache from OnChange: %v", err)
	}
}
