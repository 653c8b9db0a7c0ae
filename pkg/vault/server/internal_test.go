package server

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func testHub() *hub {
	return &hub{schedule: func() vault.Schedule { return vault.Schedule{} }, now: func() time.Time { return time.UnixMilli(1000) },
		log: slog.New(slog.DiscardHandler)}
}

// buildOf builds the snapshot of gen from records, as sync does from a walk
// of the store.
func buildOf(h *hub, gen int64, records []vault.Record, blocks map[int64][]vault.CredentialBlock, prev *shared) *shared {
	b := h.newBuilder(gen, blocks, prev)
	for i := range records {
		b.add(&records[i])
	}
	return b.finish()
}

func key(id int64, k string) vault.Record {
	return vault.Record{ID: id, Provider: "openai", Credential: vault.Credential{Type: vault.TypeAPIKey, Key: k}}
}

// A subscriber one publication behind gets the hub's shared delta bytes; one
// further behind gets its own coalesced diff.
func TestFramesSince(t *testing.T) {
	h := testHub()
	s1 := buildOf(h, 1, []vault.Record{key(1, "a"), key(2, "b")}, nil, nil)
	s2 := buildOf(h, 2, []vault.Record{key(1, "a"), key(2, "b2"), key(3, "c")}, nil, s1)
	s3 := buildOf(h, 3, []vault.Record{key(2, "b2"), key(3, "c")}, nil, s2)
	if got := framesSince(s2, s3, shape15); &got[0] != &s3.delta[0] {
		t.Fatal("an in-sync subscriber did not get the shared delta")
	}
	if got := string(framesSince(s2, s3, shape15)); strings.Count(got, "event: ") != 1 || !strings.Contains(got, `"kind":"removed","generation":3,"serverNowMs":1000`) {
		t.Fatalf("delta s2→s3 = %q", got)
	}
	got := string(framesSince(s1, s3, shape15))
	ib, ic, ia := strings.Index(got, `"key":"b2"`), strings.Index(got, `"key":"c"`), strings.Index(got, "event: removed")
	if strings.Count(got, "event: ") != 3 || ib < 0 || ic < ib || ia < ic || !strings.Contains(got, `"id":1}`) {
		t.Fatalf("coalesced diff s1→s3 = %q", got)
	}
	if d := diff(nil, s3, buildOf(h, 4, []vault.Record{key(2, "b2"), key(3, "c")}, nil, nil), shape15, nil); len(d) != 0 {
		t.Fatalf("an unchanged set emitted %q", d)
	}
}

// find locates every id of a snapshot whatever the hint, whether the rows
// ascend by id or not, and reports ids it does not hold as absent.
func TestSharedFind(t *testing.T) {
	h := testHub()
	for _, ids := range [][]int64{{1, 4, 9}, {9, 1, 4}} {
		var recs []vault.Record
		for _, id := range ids {
			recs = append(recs, key(id, "k"))
		}
		sh := buildOf(h, 1, recs, nil, nil)
		for want, id := range ids {
			for hint := range len(ids) + 1 {
				if j, ok := sh.find(id, hint); !ok || j != want {
					t.Errorf("ids %v: find(%d, hint %d) = %d, %v; want %d", ids, id, hint, j, ok, want)
				}
			}
		}
		for _, id := range []int64{0, 2, 10} {
			if _, ok := sh.find(id, 0); ok {
				t.Errorf("ids %v: find(%d) found an absent id", ids, id)
			}
		}
	}
}

// TestEntryWireBytes pins an entry's prefix and its block list: member
// order, a null identity key, extension values as stored, and updatedAtMs
// only when known.
func TestEntryWireBytes(t *testing.T) {
	e, err := encodeEntry(vault.NewEntry(vault.Record{ID: 7, Provider: "p<1>", Credential: vault.Credential{Type: vault.TypeAPIKey, Key: "k"}}))
	if want := `{"id":7,"provider":"p<1>","credential":{"type":"api_key","key":"k"},"identityKey":null`; err != nil || string(e.prefix) != want {
		t.Errorf("prefix = %s, %v\nwant %s", e.prefix, err, want)
	}
	e, err = encodeEntry(vault.NewEntry(vault.Record{ID: 8, Provider: "p", IdentityKey: "key:1", Credential: vault.Credential{Type: vault.TypeAPIKey, Key: "k"}}))
	if want := `{"id":8,"provider":"p","credential":{"type":"api_key","key":"k"},"identityKey":"key:1"`; err != nil || string(e.prefix) != want {
		t.Errorf("prefix = %s, %v\nwant %s", e.prefix, err, want)
	}
	// An extension value keeps its bytes: Credential.Equal compares them raw.
	e, err = encodeEntry(vault.NewEntry(vault.Record{ID: 9, Provider: "p", Credential: vault.Credential{Type: vault.TypeOAuth, Refresh: "r", Access: "a", Expires: 1,
		Extra: map[string]json.RawMessage{"orgName": json.RawMessage(`"A&B <x>"`)}}}))
	if want := `{"id":9,"provider":"p","credential":{"type":"oauth","refresh":"__remote__","access":"a","expires":1,"orgName":"A&B <x>"},"identityKey":null`; err != nil || string(e.pfx(true)) != want {
		t.Errorf("full prefix = %s, %v\nwant %s", e.pfx(true), err, want)
	}
	got := appendBlockList([]byte("x"), []vault.CredentialBlock{{ProviderKey: "openai-codex:oauth", Scope: "chat", UntilMs: 9, UpdatedAtMs: 3}, {ProviderKey: "a:b", UntilMs: 10}})
	if want := `x,"blocks":[{"providerKey":"openai-codex:oauth","blockScope":"chat","blockedUntilMs":9,"updatedAtMs":3},{"providerKey":"a:b","blockScope":"","blockedUntilMs":10}]`; string(got) != want {
		t.Errorf("blocks = %s\nwant %s", got, want)
	}
	if got := appendBlockList([]byte("x"), nil); string(got) != "x" {
		t.Errorf("no blocks = %s", got)
	}
}
