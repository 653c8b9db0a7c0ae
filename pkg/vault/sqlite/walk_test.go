package sqlite_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// Walk shows exactly the records List returns, in the same order, for the
// whole vault and for one provider; UpsertWalk shows what Upsert returns.
func TestWalkShowsWhatListReturns(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	withExtra := oauth("x@x.io", "rx")
	withExtra.Extra = map[string]json.RawMessage{"apiEndpoint": json.RawMessage(`"https://x"`)}
	for _, u := range []struct {
		provider string
		cred     vault.Credential
	}{
		{"anthropic", oauth("a@x.io", "r1")}, {"openai", apiKey("sk-1")}, {"anthropic", withExtra},
		{"openai", apiKey("sk-2")}, {"anthropic", oauth("a@x.io", "r2")}, // replaces the first row's data
	} {
		must[[]vault.Record](t)(st.Upsert(ctx, u.provider, u.cred))
	}
	walk := func(provider string) []vault.Record {
		var out []vault.Record
		if err := st.Walk(ctx, provider, func(r *vault.Record) { out = append(out, *r) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, p := range []string{"", "anthropic", "openai", "none"} {
		list := must[[]vault.Record](t)(st.List(ctx, p))
		if got := walk(p); !reflect.DeepEqual(got, list) {
			t.Errorf("Walk(%q) = %+v\nList = %+v", p, got, list)
		}
	}

	var walked []vault.Record
	if err := st.UpsertWalk(ctx, "anthropic", oauth("b@x.io", "r3"), func(r *vault.Record) { walked = append(walked, *r) }); err != nil {
		t.Fatal(err)
	}
	list := must[[]vault.Record](t)(st.List(ctx, "anthropic"))
	if len(list) != 3 || !reflect.DeepEqual(walked, list) {
		t.Fatalf("UpsertWalk showed %+v\nList = %+v", walked, list)
	}
	err := st.UpsertWalk(ctx, "", oauth("c@x.io", "r4"), func(*vault.Record) { t.Error("fn called for a refused write") })
	if vault.ErrorCode(err) != vault.EINVALID {
		t.Fatalf("UpsertWalk without a provider = %v, want EINVALID", err)
	}
}
