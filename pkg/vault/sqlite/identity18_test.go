package sqlite_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// orgCred is an anthropic-style OAuth credential with optional account and org.
func orgCred(email, account, org, refresh string) vault.Credential {
	c := oauth(email, refresh)
	c.AccountID = account
	if org != "" {
		c.Extra = map[string]json.RawMessage{vault.FieldOrgID: json.RawMessage(`"` + org + `"`), "orgName": json.RawMessage(`"Team"`)}
	}
	return c
}

// TestUpsertOrgIdentity covers the 18.1.21 identity keys and matching
// (email, account or project, plus |org:<orgId>; org-only keys; the
// one-way org upgrade).
func TestUpsertOrgIdentity(t *testing.T) {
	const p = "anthropic"
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"two orgs of one email stay two rows",
			[]step{upsert(p, orgCred("A@B.c", "acc-1", "org-1", "r1")), upsert(p, orgCred("a@b.c", "", "org-2", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-1 r1", "2 anthropic email:a@b.c|org:org-2 r2"}},
		{"an org-less credential never replaces an org-scoped row",
			[]step{upsert(p, orgCred("a@b.c", "", "org-1", "r1")), upsert(p, orgCred("a@b.c", "", "", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-1 r1", "2 anthropic email:a@b.c r2"}},
		{"one-way upgrade: an org login claims the pre-org row",
			[]step{upsert(p, orgCred("a@b.c", "", "", "r1")), upsert(p, orgCred("a@b.c", "", "org-1", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-1 r2"}},
		{"account-only key (15.x: null)",
			[]step{upsert(p, orgCred("", "only-acc", "", "r1")), upsert(p, orgCred("", "only-acc", "", "r2"))},
			[]string{"1 anthropic account:only-acc r2"}},
		{"org-only row is claimed once a base identity is known",
			[]step{upsert(p, orgCred("", "", "org-9", "r1")), upsert(p, orgCred("a@b.c", "", "org-9", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-9 r2"}},
		{"same-org row sharing a stored base identifier is claimed",
			[]step{upsert(p, orgCred("a@b.c", "acc-1", "org-1", "r1")), upsert(p, orgCred("", "acc-1", "org-1", "r2"))},
			[]string{"1 anthropic account:acc-1|org:org-1 r2"}},
		{"codex workspace id repeated as account is not a claimable base",
			[]step{upsert("openai-codex", orgCred("", "ws-1", "", "r1")), upsert("openai-codex", orgCred("", "ws-1", "ws-1", "r2"))},
			[]string{"1 openai-codex account:ws-1 r1", "2 openai-codex account:ws-1|org:ws-1 r2"}},
		{"other providers ignore the org",
			[]step{upsert("zai", orgCred("a@b.c", "", "org-1", "r1")), upsert("zai", orgCred("a@b.c", "", "org-2", "r2"))},
			[]string{"1 zai email:a@b.c r2"}},
		{"an oauth upload disables the provider's api keys",
			[]step{upsert("zai", apiKey("sk-A")), upsert("zai", apiKey("sk-B")), upsert("zai", orgCred("a@b.c", "", "", "r1"))},
			[]string{"1 zai - sk-A [replaced by oauth login]", "2 zai - sk-B [replaced by oauth login]", "3 zai email:a@b.c r1"}},
		{"the upgrade purges the pre-org tombstone",
			[]step{upsert(p, orgCred("a@b.c", "", "", "r1")), disable(1, ""), upsert(p, orgCred("a@b.c", "", "org-1", "r2"))},
			[]string{"2 anthropic email:a@b.c|org:org-1 r2"}},
		{"another org's tombstone survives",
			[]step{upsert(p, orgCred("a@b.c", "", "org-2", "r1")), disable(1, ""), upsert(p, orgCred("a@b.c", "", "org-1", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-2 r1 [disabled]", "2 anthropic email:a@b.c|org:org-1 r2"}},
		{"structured cloudflare keys match on their token",
			[]step{upsert("cloudflare-ai-gateway", apiKey(`{"token":"cf-1","accountId":"a","gatewayId":"g"}`)), upsert("cloudflare-ai-gateway", apiKey(" cf-1 "))},
			[]string{"1 cloudflare-ai-gateway -  cf-1 "}},
		{"structured alibaba keys match on their token",
			[]step{upsert("alibaba-token-plan", apiKey("sk-ali")), upsert("alibaba-token-plan", apiKey(`{"token":"sk-ali","cookie":"c"}`)), upsert("alibaba-token-plan", apiKey(`{"token":"sk-other"}`))},
			[]string{`1 alibaba-token-plan - {"token":"sk-ali","cookie":"c"}`, `2 alibaba-token-plan - {"token":"sk-other"}`}},
		{"other providers compare keys byte for byte",
			[]step{upsert("openai", apiKey(`{"token":"t"}`)), upsert("openai", apiKey("t"))},
			[]string{`1 openai - {"token":"t"}`, "2 openai - t"}},
		{"replace-all matches by the org upgrade too",
			[]step{upsert(p, orgCred("a@b.c", "", "", "r1")), replaceAll(p, orgCred("a@b.c", "", "org-1", "r2"))},
			[]string{"1 anthropic email:a@b.c|org:org-1 r2"}},
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

func TestExtrasAndSourceRoundTrip(t *testing.T) {
	st, e := newStore(t)
	ctx := context.Background()
	c := orgCred("a@b.c", "", "org-1", "r1")
	c.Extra["authorizedAt"] = json.RawMessage(`1765000000000`)
	c.Extra["foo"] = json.RawMessage(`{"bar":1}`)
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", c))
	k := apiKey("sk-login")
	k.Source = vault.SourceLogin
	must[[]vault.Record](t)(st.Upsert(ctx, "openai", k))
	st.Close()
	st = e.open(t)
	got := must[vault.Record](t)(st.Get(ctx, 1))
	if !got.Credential.Equal(c) {
		t.Fatalf("oauth extras lost: %v", got.Credential.Extra)
	}
	if got := must[vault.Record](t)(st.Get(ctx, 2)); got.Credential.Source != vault.SourceLogin {
		t.Fatalf("api key source lost: %+v", got.Credential.Source)
	}
}

// TestOpenBackfillsIdentityKeys opens a vault written by the code before
// the 18.1.21 rule: such rows have a NULL key (anthropic without an email)
// or a key without the org qualifier, and no identity_rule marker.
func TestOpenBackfillsIdentityKeys(t *testing.T) {
	st, e := newStore(t)
	ctx := context.Background()
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", orgCred("", "acc-1", "", "r1")))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", orgCred("a@b.c", "", "org-1", "r2")))
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", orgCred("", "", "", "r3")))
	must[[]vault.Record](t)(st.Upsert(ctx, "zai", orgCred("z@b.c", "", "", "r4")))
	st.Close()
	db := rawDB(t, e.path)
	// What the 15.x rule stored.
	execSQL(t, db, "UPDATE auth_credentials SET identity_key = NULL WHERE id IN (1, 3)")
	execSQL(t, db, "UPDATE auth_credentials SET identity_key = 'email:a@b.c' WHERE id = 2")
	execSQL(t, db, "DELETE FROM meta WHERE key = 'identity_rule'")
	db.Close()

	st = e.open(t)
	wantState(t, st,
		"1 anthropic account:acc-1 r1",
		"2 anthropic email:a@b.c|org:org-1 r2",
		"3 anthropic - r3",
		"4 zai email:z@b.c r4")
	// The backfilled keys match: an upload of the same account updates row 1.
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", orgCred("", "acc-1", "", "r5")))
	wantState(t, st,
		"1 anthropic account:acc-1 r5",
		"2 anthropic email:a@b.c|org:org-1 r2",
		"3 anthropic - r3",
		"4 zai email:z@b.c r4")

	// The one-time re-key ran once: a 15.x key written later is only
	// backfilled when NULL.
	st.Close()
	db = rawDB(t, e.path)
	execSQL(t, db, "UPDATE auth_credentials SET identity_key = 'email:a@b.c' WHERE id = 2")
	execSQL(t, db, "UPDATE auth_credentials SET identity_key = NULL WHERE id = 4")
	db.Close()
	st = e.open(t)
	wantState(t, st,
		"1 anthropic account:acc-1 r5",
		"2 anthropic email:a@b.c r2",
		"3 anthropic - r3",
		"4 zai email:z@b.c r4")
}
