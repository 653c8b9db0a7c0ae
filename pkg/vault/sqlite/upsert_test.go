package sqlite_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

type step func(t *testing.T, st *sqlite.Store)

func upsert(p string, c vault.Credential) step {
	return func(t *testing.T, st *sqlite.Store) {
		t.Helper()
		if _, err := st.Upsert(context.Background(), p, c); err != nil {
			t.Fatal(err)
		}
	}
}

func replaceAll(p string, cs ...vault.Credential) step {
	return func(t *testing.T, st *sqlite.Store) {
		t.Helper()
		if _, err := st.ReplaceAll(context.Background(), p, cs); err != nil {
			t.Fatal(err)
		}
	}
}

func disable(id int64, cause string) step {
	return func(t *testing.T, st *sqlite.Store) {
		t.Helper()
		if err := st.Disable(context.Background(), id, cause); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpsertReplaceAndPurge(t *testing.T) {
	const p = "anthropic"
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"identical api key updates in place",
			[]step{upsert("openai", apiKey("sk-A")), upsert("openai", apiKey("sk-A"))},
			[]string{"1 openai - sk-A"}},
		{"different api keys coexist",
			[]step{upsert("openai", apiKey("sk-A")), upsert("openai", apiKey("sk-B"))},
			[]string{"1 openai - sk-A", "2 openai - sk-B"}},
		{"oauth with the same identity replaces the row in place",
			[]step{upsert(p, oauth("a@x.io", "r1")), upsert(p, oauth("a@x.io", "r2"))},
			[]string{"1 anthropic email:a@x.io r2"}},
		{"oauth identity ignores email case and spaces",
			[]step{upsert(p, oauth(" A@X.io ", "r1")), upsert(p, oauth("a@x.io", "r2"))},
			[]string{"1 anthropic email:a@x.io r2"}},
		{"oauth with another identity inserts",
			[]step{upsert(p, oauth("a@x.io", "r1")), upsert(p, oauth("b@x.io", "r2"))},
			[]string{"1 anthropic email:a@x.io r1", "2 anthropic email:b@x.io r2"}},
		{"oauth without identity always inserts",
			[]step{upsert(p, oauth("", "r1")), upsert(p, oauth("", "r1"))},
			[]string{"1 anthropic - r1", "2 anthropic - r1"}},
		{"same identity on another provider inserts",
			[]step{upsert(p, oauth("a@x.io", "r1")), upsert("openai-codex", oauth("a@x.io", "r2"))},
			[]string{"1 anthropic email:a@x.io r1", "2 openai-codex email:a@x.io r2"}},
		{"further api key matches are soft-deleted as replaced",
			[]step{replaceAll("openai", apiKey("sk-A"), apiKey("sk-A")), upsert("openai", apiKey("sk-A"))},
			[]string{"1 openai - sk-A"}}, // the replaced row is then purged by the active key (18.1.21)
		{"further oauth matches are replaced and then purged as superseded",
			[]step{replaceAll(p, oauth("a@x.io", "r1"), oauth("a@x.io", "r2")), upsert(p, oauth("a@x.io", "r3"))},
			[]string{"1 anthropic email:a@x.io r3"}},
		{"superseded disabled row is purged and its id not reused",
			[]step{upsert(p, oauth("a@x.io", "r1")), disable(1, vault.CauseLoggedOut), upsert(p, oauth("a@x.io", "r2")), upsert(p, oauth("c@x.io", "r3"))},
			[]string{"2 anthropic email:a@x.io r2", "3 anthropic email:c@x.io r3"}},
		{"disabled rows of other identities survive the purge",
			[]step{upsert(p, oauth("a@x.io", "r1")), disable(1, ""), upsert(p, oauth("b@x.io", "r2"))},
			[]string{"1 anthropic email:a@x.io r1 [disabled]", "2 anthropic email:b@x.io r2"}},
		{"disabled rows of other providers survive the purge",
			[]step{upsert("openai-codex", oauth("a@x.io", "r1")), disable(1, ""), upsert(p, oauth("a@x.io", "r2"))},
			[]string{"1 openai-codex email:a@x.io r1 [disabled]", "2 anthropic email:a@x.io r2"}},
		{"disabled api keys are purged once the provider has an active api key",
			[]step{upsert("openai", apiKey("sk-A")), disable(1, ""), upsert("openai", apiKey("sk-A"))},
			[]string{"2 openai - sk-A"}},
		{"disabled api keys survive an oauth write",
			[]step{upsert("zai", apiKey("sk-A")), disable(1, ""), upsert("zai", oauth("a@x.io", "r1"))},
			[]string{"1 zai - sk-A [disabled]", "2 zai email:a@x.io r1"}},
		{"replace-all updates matches, inserts new ones and replaces the rest",
			[]step{replaceAll("openai", apiKey("sk-A"), apiKey("sk-B")), replaceAll("openai", apiKey("sk-B"), apiKey("sk-C"))},
			[]string{"2 openai - sk-B", "3 openai - sk-C"}},
		{"replace-all with nothing disables every row",
			[]step{replaceAll("openai", apiKey("sk-A")), replaceAll("openai")},
			[]string{"1 openai - sk-A [replaced by newer credential]"}},
		{"replace-all purges superseded disabled rows",
			[]step{upsert(p, oauth("a@x.io", "r1")), disable(1, ""), replaceAll(p, oauth("a@x.io", "r2"))},
			[]string{"2 anthropic email:a@x.io r2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newStore(t)
			for _, s := range tt.steps {
				s(t, st)
			}
			wantState(t, st, tt.want...)
		})
	}
}

func TestUpsertReplacesDataFullyAndReturnsActiveRows(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	first := oauth("a@x.io", "r1")
	first.ProjectID, first.AccountID, first.EnterpriseURL = "proj", "acct", "https://ghe.example"
	first.Extra = map[string]json.RawMessage{"apiEndpoint": json.RawMessage(`"https://x"`)}
	recs := must[[]vault.Record](t)(st.Upsert(ctx, "github-copilot", first))
	if len(recs) != 1 || !recs[0].Credential.Equal(first) {
		t.Fatalf("first upsert returned %v", recs)
	}
	must[[]vault.Record](t)(st.Upsert(ctx, "other", apiKey("sk-other")))
	second := oauth("a@x.io", "r2")
	second.AccountID = "acct"
	recs = must[[]vault.Record](t)(st.Upsert(ctx, "github-copilot", second))
	if len(recs) != 1 || recs[0].ID != 1 || !recs[0].Credential.Equal(second) {
		t.Fatalf("second upsert returned %v", recs)
	}
	got := must[vault.Record](t)(st.Get(ctx, 1))
	if got.Credential.ProjectID != "" || got.Credential.EnterpriseURL != "" || got.Credential.Extra != nil {
		t.Fatalf("fields absent from the new credential were kept: %+v", got.Credential)
	}
}

func TestWritesRejectInvalidInputWithoutChange(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-A")))
	g := gen(t, st)
	noRefresh := oauth("a@x.io", "r") // 18.1.21 accepts an empty refresh, not an empty access
	noRefresh.Access = ""
	tests := []struct {
		name string
		call func() error
	}{
		{"upsert of oauth without access", func() error { _, err := st.Upsert(ctx, "x", noRefresh); return err }},
		{"upsert of the remote sentinel", func() error { _, err := st.Upsert(ctx, "x", oauth("a@x.io", vault.RemoteRefreshSentinel)); return err }},
		{"upsert without provider", func() error { _, err := st.Upsert(ctx, " ", apiKey("k")); return err }},
		{"replace-all with one bad credential", func() error {
			_, err := st.ReplaceAll(ctx, "openai", []vault.Credential{apiKey("sk-B"), apiKey("")})
			return err
		}},
		{"update with an invalid credential", func() error { _, err := st.UpdateCredential(ctx, 1, noRefresh); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); vault.ErrorCode(err) != vault.EINVALID {
				t.Fatalf("err = %v, want code %s", err, vault.EINVALID)
			}
		})
	}
	wantState(t, st, "1 openai - sk-A")
	if gen(t, st) != g {
		t.Fatal("rejected writes advanced the generation")
	}
}

// A credential of an empty or unknown type built in Go (import, migrate,
// login, the refresh write-back) is refused by every write path with an
// error naming the type, before the vault changes.
func TestWritesRejectUnknownCredentialTypes(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-A")))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))
	g := gen(t, st)
	empty := oauth("b@x.io", "r2")
	empty.Type = ""
	unknown := apiKey("sk-B")
	unknown.Type = "bearer"
	tests := []struct {
		name, want string
		call       func() error
	}{
		{"upsert of an empty type", "(was empty)", func() error { _, err := st.Upsert(ctx, "anthropic", empty); return err }},
		{"upsert of an unknown type", `(was "bearer")`, func() error { _, err := st.Upsert(ctx, "openai", unknown); return err }},
		{"replace-all with an unknown type", `(was "bearer")`, func() error {
			_, err := st.ReplaceAll(ctx, "openai", []vault.Credential{apiKey("sk-C"), unknown})
			return err
		}},
		{"update to an empty type", "(was empty)", func() error { _, err := st.UpdateCredential(ctx, 2, empty); return err }},
		{"update to an unknown type", `(was "bearer")`, func() error { _, err := st.UpdateCredential(ctx, 1, unknown); return err }},
		{"import of an empty type", "record 7: credential.type", func() error {
			_, err := st.ImportRecords(ctx, []vault.Record{{ID: 6, Provider: "openai", Credential: apiKey("sk-D")}, {ID: 7, Provider: "anthropic", Credential: empty}})
			return err
		}},
		{"import of an unknown type", `record 1: credential.type must be "oauth" or "api_key" (was "bearer")`, func() error {
			_, err := st.ImportRecords(ctx, []vault.Record{{ID: 1, Provider: "openai", Credential: unknown}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if vault.ErrorCode(err) != vault.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want EINVALID containing %q", err, tt.want)
			}
		})
	}
	wantState(t, st, "1 openai - sk-A", "2 anthropic email:a@x.io r1")
	if gen(t, st) != g {
		t.Fatal("rejected writes advanced the generation")
	}
}

func TestDisableVariants(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.ReplaceAll(ctx, "openai", []vault.Credential{apiKey("sk-A"), apiKey("sk-B")}))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))

	if err := st.Disable(ctx, 1, "  deleted by user "); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 99} {
		err := st.Disable(ctx, id, "")
		if vault.ErrorCode(err) != vault.ENOTFOUND || vault.ErrorMessage(err) != vault.NotFoundID(id).Message {
			t.Fatalf("Disable(%d) = %v, want %q", id, err, vault.NotFoundID(id).Message)
		}
	}

	cur := oauth("a@x.io", "r1")
	stale := oauth("a@x.io", "r0")
	for _, tc := range []struct {
		name     string
		id       int64
		expected vault.Credential
		want     bool
	}{
		{"stale expectation does not disable", 3, stale, false},
		{"missing row does not disable", 42, cur, false},
		{"disabled row does not disable", 1, apiKey("sk-A"), false},
		{"matching expectation disables", 3, cur, true},
	} {
		got, err := st.DisableIf(ctx, tc.id, tc.expected, vault.CauseClientRefresh+"invalid_grant")
		if err != nil || got != tc.want {
			t.Fatalf("%s: DisableIf = %v, %v", tc.name, got, err)
		}
	}

	n, err := st.DisableProvider(ctx, "openai", vault.CauseLoggedOut)
	if err != nil || n != 1 {
		t.Fatalf("DisableProvider = %d, %v; want 1", n, err)
	}
	g := gen(t, st)
	if n, err := st.DisableProvider(ctx, "openai", vault.CauseLoggedOut); err != nil || n != 0 || gen(t, st) != g {
		t.Fatalf("second DisableProvider = %d, %v (generation %d → %d)", n, err, g, gen(t, st))
	}
	wantState(t, st,
		"1 openai - sk-A [deleted by user]",
		"2 openai - sk-B [logged out by user]",
		"3 anthropic email:a@x.io r1 [oauth refresh failed: invalid_grant]")
}

func TestUpdateCredential(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "openai-codex", oauth("old@x.io", "r1")))
	must[[]vault.Record](t)(st.Upsert(ctx, "openai-codex", oauth("new@x.io", "r2")))
	if err := st.Disable(ctx, 2, vault.CauseLoggedOut); err != nil {
		t.Fatal(err)
	}
	// Row 1 is refreshed and now reports the identity of disabled row 2,
	// which is therefore superseded and purged.
	rec, err := st.UpdateCredential(ctx, 1, oauth("new@x.io", "r3"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != 1 || rec.IdentityKey != "email:new@x.io" || rec.Credential.Refresh != "r3" {
		t.Fatalf("UpdateCredential returned %+v", rec)
	}
	wantState(t, st, "1 openai-codex email:new@x.io r3")

	must[[]vault.Record](t)(st.Upsert(ctx, "x", apiKey("k")))
	if err := st.Disable(ctx, 3, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{3, 2, 77} {
		if _, err := st.UpdateCredential(ctx, id, oauth("a@x.io", "r")); vault.ErrorCode(err) != vault.ENOTFOUND {
			t.Fatalf("UpdateCredential(%d) = %v, want not found", id, err)
		}
	}
}

func TestDedupeKeepsNewestPerIdentity(t *testing.T) {
	st, e := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.ReplaceAll(ctx, "anthropic", []vault.Credential{
		oauth("a@x.io", "r1"), oauth("a@x.io", "r2"), oauth("b@x.io", "r3"),
		oauth("", "r4"), oauth("", "r5"), apiKey("sk-A"), apiKey("sk-A"),
	}))
	must[[]vault.Record](t)(st.Upsert(ctx, "openai-codex", oauth("a@x.io", "r8")))
	must[[]vault.Record](t)(st.ReplaceAll(ctx, "google", []vault.Credential{oauth("g@x.io", "r9"), oauth("g@x.io", "r10")}))
	// A row without a stored identity key is matched on the recomputed one.
	execSQL(t, rawDB(t, e.path), "UPDATE auth_credentials SET identity_key = NULL WHERE id = 9")

	n, err := st.Dedupe(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Dedupe = %d, %v; want 2", n, err)
	}
	wantState(t, st,
		"1 anthropic email:a@x.io r1 [deduplicated duplicate credential]",
		"2 anthropic email:a@x.io r2",
		"3 anthropic email:b@x.io r3",
		"4 anthropic - r4",
		"5 anthropic - r5",
		"6 anthropic - sk-A",
		"7 anthropic - sk-A",
		"8 openai-codex email:a@x.io r8",
		"9 google - r9 [deduplicated duplicate credential]",
		"10 google email:g@x.io r10")
	g := gen(t, st)
	if n, err := st.Dedupe(ctx); err != nil || n != 0 || gen(t, st) != g {
		t.Fatalf("second Dedupe = %d, %v, generation moved %v", n, err, gen(t, st) != g)
	}
	act := must[[]vault.Record](t)(st.List(ctx, "anthropic"))
	if !slices.Equal(ids(act), []int64{2, 3, 4, 5, 6, 7}) {
		t.Fatalf("List(anthropic) ids = %v", ids(act))
	}
}
