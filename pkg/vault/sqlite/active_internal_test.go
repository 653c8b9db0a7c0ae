package sqlite

import (
	"slices"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func testEntry(id int64, provider string) *entry {
	return newEntry(vault.Record{ID: id, Provider: provider, Credential: vault.Credential{Type: vault.TypeOAuth, Email: "a@x.io"}})
}

func entryIDs(es []*entry) []int64 {
	var ids []int64
	for _, e := range es {
		ids = append(ids, e.rec.ID)
	}
	return ids
}

// The entry lists of the active set stay sorted by id and agree with byID
// whatever the order of puts, replacements, provider moves and removals.
func TestActiveSetListsStaySorted(t *testing.T) {
	a := newActiveSet(1)
	for _, id := range []int64{5, 2, 9, 7, 1} {
		a.put(id, testEntry(id, "anthropic"))
	}
	a.put(7, testEntry(7, "openai")) // moves provider
	a.put(2, testEntry(2, "anthropic"))
	a.put(9, nil)
	if got, want := entryIDs(a.all), []int64{1, 2, 5, 7}; !slices.Equal(got, want) {
		t.Fatalf("all = %v, want %v", got, want)
	}
	if got, want := entryIDs(a.byProv["anthropic"]), []int64{1, 2, 5}; !slices.Equal(got, want) {
		t.Fatalf("anthropic = %v, want %v", got, want)
	}
	if got, want := entryIDs(a.byProv["openai"]), []int64{7}; !slices.Equal(got, want) {
		t.Fatalf("openai = %v, want %v", got, want)
	}
	for _, e := range a.all {
		if a.byID[e.rec.ID] != e {
			t.Fatalf("entry %d in all is not the one in byID", e.rec.ID)
		}
	}
	a.put(7, nil)
	if _, ok := a.byProv["openai"]; ok {
		t.Fatal("an emptied provider list is kept")
	}
}

// collect merges the batch's changes (new, replaced and removed rows, the
// running op's over the batch's) into the committed list, in id order.
func TestViewCollectMergesChanges(t *testing.T) {
	a := newActiveSet(1)
	for _, id := range []int64{2, 4, 6} {
		a.put(id, testEntry(id, "anthropic"))
	}
	v := &view{base: a}
	v.set(4, nil)                       // removed
	v.set(5, testEntry(5, "anthropic")) // new, between
	v.release()
	v.set(1, testEntry(1, "anthropic")) // new, before all
	v.set(5, testEntry(5, "openai"))    // the running op moves it away
	v.set(8, testEntry(8, "anthropic")) // new, after all
	keep := func(e *entry) bool { return e.rec.Provider == "anthropic" }
	if got, want := entryIDs(v.collect(a.byProv["anthropic"], keep)), []int64{1, 2, 6, 8}; !slices.Equal(got, want) {
		t.Fatalf("collect = %v, want %v", got, want)
	}
	v.rollback()
	if got, want := entryIDs(v.collect(a.byProv["anthropic"], keep)), []int64{2, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("collect after rollback = %v, want %v", got, want)
	}
}
