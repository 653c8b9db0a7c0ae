package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// The encoded credentials array is reused between requests of one
// generation, yet follows the clock exactly: a block leaves every shape's
// body at its deadline (not a millisecond later), with no
// generation change; rotatesInMs and serverNowMs are the request's; a
// clock that steps back gets the blocks live at its time again.
func TestSnapshotRenderFollowsBlockDeadlines(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	codex := e.upsert("openai-codex", oauthCred("c@x.y", now+3_600_000))
	other := e.upsert("anthropic", oauthCred("a@x.y", now+3_600_000))
	ctx := context.Background()
	for _, b := range []struct {
		id    int64
		key   string
		scope string
		in    int64
	}{{codex.ID, "openai-codex:oauth", "chat", 1_000}, {codex.ID, "openai-codex:oauth", "spark", 5_000}, {other.ID, "anthropic:oauth", "", 3_000}} {
		if err := e.client.PostBlock(ctx, b.id, vault.CredentialBlock{ProviderKey: b.key, Scope: b.scope, UntilMs: now + b.in}); err != nil {
			t.Fatal(err)
		}
	}
	full := []string{api.CapabilitiesHeader, api.CodexMeterBlockScopes}
	sharedHdr := []string{api.CapabilitiesHeader, "foo"}
	scopes := func(hdr ...string) string {
		t.Helper()
		var out []string
		for _, id := range []int64{codex.ID, other.ID} {
			bl := snapshotBlocks(t, e, id, hdr...)
			for _, s := range []string{`"chat"`, `"spark"`, `"shared"`, `"blockScope":""`} {
				if strings.Contains(bl, s) {
					out = append(out, itoa(id)+":"+strings.Trim(strings.TrimPrefix(s, `"blockScope":`), `"`))
				}
			}
		}
		return strings.Join(out, " ")
	}
	tag := func() string {
		t.Helper()
		_, h, _ := e.get("/v1/snapshot", full...)
		return h.Get("ETag")
	}
	c, o := itoa(codex.ID), itoa(other.ID)
	etag := tag()
	steps := []struct {
		at           int64 // ms after the posts
		full, shared string
	}{
		{0, c + ":chat " + c + ":spark " + o + ":", c + ":shared " + o + ":"},
		{999, c + ":chat " + c + ":spark " + o + ":", c + ":shared " + o + ":"},
		{1_000, c + ":spark " + o + ":", c + ":shared " + o + ":"},
		{2_999, c + ":spark " + o + ":", c + ":shared " + o + ":"},
		{3_000, c + ":spark", c + ":shared"},
		{5_000, "", ""},
		{500, c + ":chat " + c + ":spark " + o + ":", c + ":shared " + o + ":"}, // the clock stepped back
	}
	at := int64(0)
	for _, s := range steps {
		e.clk.Add(time.Duration(s.at-at) * time.Millisecond)
		at = s.at
		if got := scopes(full...); got != s.full {
			t.Errorf("+%d ms, capable reader: blocks %q, want %q", s.at, got, s.full)
		}
		if got := scopes(sharedHdr...); got != s.shared {
			t.Errorf("+%d ms, shared projection: blocks %q, want %q", s.at, got, s.shared)
		}
		if got := scopes(); got != "" {
			t.Errorf("+%d ms, 15.x reader got blocks %q", s.at, got)
		}
		_, _, body := e.get("/v1/snapshot", full...)
		if !strings.Contains(body, `"serverNowMs":`+itoa(now+s.at)+",") {
			t.Errorf("+%d ms: serverNowMs not the request's: %.120s", s.at, body)
		}
	}
	if got := tag(); got != etag {
		t.Errorf("expiry by clock moved the generation: ETag %s → %s", etag, got)
	}
}
