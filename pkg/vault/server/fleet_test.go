package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

// TestBlockPostErrors pins the statuses and texts of POST
// /v1/credential/:id/block: schema, size caps, and a providerKey that must
// be the credential's <provider>:<type>.
func TestBlockPostErrors(t *testing.T) {
	e := newEnv(t)
	api := e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-1"})
	id := itoa(api.ID)
	until := itoa(e.clk.Now().UnixMilli() + 60_000)
	missing := "providerKey must be a string (length at least 1) (was missing)\nblockScope must be a string (was missing)\nblockedUntilMs must be a number (was missing)"
	long := strings.Repeat("k", 129)
	for _, c := range []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"empty body", "/v1/credential/" + id + "/block", "", 400, "Request body required"},
		{"malformed", "/v1/credential/" + id + "/block", "{", 400, "Invalid JSON body: unexpected end of JSON input"},
		{"empty object", "/v1/credential/" + id + "/block", "{}", 400, missing},
		{"array", "/v1/credential/" + id + "/block", "[]", 400, missing},
		{"empty object on unknown id is still 400", "/v1/credential/999/block", "{}", 400, missing},
		{"empty key", "/v1/credential/" + id + "/block", `{"providerKey":"","blockScope":"","blockedUntilMs":1}`, 400, "providerKey must be at least length 1 (was 0)"},
		{"string deadline", "/v1/credential/" + id + "/block", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":"1"}`, 400, "blockedUntilMs must be a number (was a string)"},
		{"overflowing deadline", "/v1/credential/" + id + "/block", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":1e999}`, 400, "blockedUntilMs must be a number (was a number)"},
		{"null scope", "/v1/credential/" + id + "/block", `{"providerKey":"openai:api_key","blockScope":null,"blockedUntilMs":1}`, 400, "blockScope must be a string (was null)"},
		{"extra key", "/v1/credential/" + id + "/block", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":1,"foo":1}`, 400, "foo must be removed"},
		{"long key", "/v1/credential/" + id + "/block", `{"providerKey":"` + long + `","blockScope":"","blockedUntilMs":1}`, 400, "providerKey must be at most 128 bytes (was 129)"},
		{"unknown id", "/v1/credential/999/block", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":` + until + `}`, 404, "No credential with id=999"},
		{"foreign key", "/v1/credential/" + id + "/block", `{"providerKey":"a:b","blockScope":"","blockedUntilMs":` + until + `}`, 400, "providerKey a:b does not match credential " + id},
		{"bad id", "/v1/credential/abc/block", `{}`, 404, "No route: POST /v1/credential/abc/block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := e.post(c.path, c.body)
			var env struct{ Error string }
			_ = json.Unmarshal([]byte(body), &env)
			if status != c.status || env.Error != c.msg || len(keys(t, json.RawMessage(body))) != 1 {
				t.Fatalf("%d %s, want %d {\"error\":%q}", status, body, c.status, c.msg)
			}
		})
	}
	if status, _, body := e.get("/v1/credential/" + id + "/block"); status != 404 || body != `{"error":"No route: GET /v1/credential/`+id+`/block"}` {
		t.Fatalf("GET block: %d %s", status, body)
	}
	if status, _, _ := e.do(http.MethodDelete, "/v1/credential/"+id+"/block", "Bearer "+testToken, ""); status != 404 {
		t.Fatalf("DELETE …/block: %d, want 404", status)
	}
	if status, _, _ := e.do(http.MethodPost, "/v1/credential/"+id+"/block", "", `{}`); status != 401 {
		t.Fatalf("no bearer: %d, want 401", status)
	}
}

// snapshotBlocks returns the blocks JSON of credential id in a GET
// /v1/snapshot answer for the given headers ("" when the key is absent).
func snapshotBlocks(t *testing.T, e *env, id int64, hdr ...string) string {
	t.Helper()
	status, h, body := e.get("/v1/snapshot", hdr...)
	if status != 200 || h.Get("Vary") != api.CapabilitiesHeader {
		t.Fatalf("snapshot: %d Vary=%q", status, h.Get("Vary"))
	}
	var snap struct{ Credentials []map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Credentials {
		if string(c["id"]) == itoa(id) {
			return string(c["blocks"])
		}
	}
	t.Fatalf("credential %d not in snapshot", id)
	return ""
}

// TestBlocksOnSnapshotsUnderCapabilities: blocks only with the
// capabilities header, Codex meter scopes folded into "shared" when
// the header lacks codex-meter-block-scopes, expired blocks dropped by
// clock without a bump, redundant posts without a bump, deadlines clamped
// to now + 31 days.
func TestBlocksOnSnapshotsUnderCapabilities(t *testing.T) {
	e := newEnv(t)
	codex := e.upsert("openai-codex", oauthCred("c@x.y", e.clk.Now().UnixMilli()+3_600_000))
	now := e.clk.Now().UnixMilli()
	post := func(scope string, until int64) {
		t.Helper()
		if err := e.client.PostBlock(context.Background(), codex.ID, vault.CredentialBlock{ProviderKey: "openai-codex:oauth", Scope: scope, UntilMs: until}); err != nil {
			t.Fatal(err)
		}
	}
	gen0, _ := e.store.Generation(context.Background())
	post("chat", now+300_000)
	post("spark", now+900_000)
	post("shared", now+600_000) // raises chat, leaves spark
	post("", now-1)             // past: a no-op
	post("model-policy:gpt-x", now+100*24*3_600_000)
	gen1, _ := e.store.Generation(context.Background())
	if gen1 != gen0+4 {
		t.Fatalf("generation moved by %d, want 4", gen1-gen0)
	}
	upd := (now / 1000) * 1000
	clamped := now + vault.MaxBlockWindow.Milliseconds()
	full := `[{"providerKey":"openai-codex:oauth","blockScope":"chat","blockedUntilMs":` + itoa(now+600_000) + `,"updatedAtMs":` + itoa(upd) + `},` +
		`{"providerKey":"openai-codex:oauth","blockScope":"model-policy:gpt-x","blockedUntilMs":` + itoa(clamped) + `,"updatedAtMs":` + itoa(upd) + `},` +
		`{"providerKey":"openai-codex:oauth","blockScope":"spark","blockedUntilMs":` + itoa(now+900_000) + `,"updatedAtMs":` + itoa(upd) + `}]`
	if got := snapshotBlocks(t, e, codex.ID, api.CapabilitiesHeader, "foo, codex-meter-block-scopes"); got != full {
		t.Fatalf("capable blocks:\n got %s\nwant %s", got, full)
	}
	shared := `[{"providerKey":"openai-codex:oauth","blockScope":"model-policy:gpt-x","blockedUntilMs":` + itoa(clamped) + `,"updatedAtMs":` + itoa(upd) + `},` +
		`{"providerKey":"openai-codex:oauth","blockScope":"shared","blockedUntilMs":` + itoa(now+900_000) + `,"updatedAtMs":` + itoa(upd) + `}]`
	if got := snapshotBlocks(t, e, codex.ID, api.CapabilitiesHeader, "foo"); got != shared {
		t.Fatalf("projected blocks:\n got %s\nwant %s", got, shared)
	}
	if got := snapshotBlocks(t, e, codex.ID); got != "" {
		t.Fatalf("15.x reader got blocks %s", got)
	}
	// The Go client reads them.
	res, err := e.client.Snapshot(context.Background(), nil, 0)
	if err != nil || len(res.Snapshot.Credentials[0].Blocks) != 3 {
		t.Fatalf("client snapshot blocks: %+v %v", res.Snapshot, err)
	}
	// Redundant re-posts: no bump, and no usage re-probe.
	inv := len(e.usage.invalidations())
	for range 3 {
		post("shared", now+600_000)
	}
	if g, _ := e.store.Generation(context.Background()); g != gen1 {
		t.Fatalf("redundant posts moved the generation %d → %d", gen1, g)
	}
	if got := e.usage.invalidations(); len(got) != inv || inv == 0 || got[0] != "openai-codex" {
		t.Fatalf("invalidations %v (had %d)", got, inv)
	}
	// Expiry by clock: chat drops out of the answer without a bump.
	e.clk.Add(700 * time.Second)
	if got := snapshotBlocks(t, e, codex.ID, api.CapabilitiesHeader, "codex-meter-block-scopes"); strings.Contains(got, `"chat"`) || !strings.Contains(got, `"spark"`) {
		t.Fatalf("after chat expiry: %s", got)
	}
	// Delete lifts everything; a second delete changes nothing.
	if err := e.client.ClearBlocks(context.Background(), codex.ID); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBlocks(t, e, codex.ID, api.CapabilitiesHeader, "codex-meter-block-scopes"); got != "" {
		t.Fatalf("blocks after delete: %s", got)
	}
	if err := e.client.ClearBlocks(context.Background(), 999); err == nil || !strings.Contains(err.(*client.Error).BrokerMessage(), "No credential with id=999") {
		t.Fatalf("delete on unknown id: %v", err)
	}
	// Disabled rows: 404 and no blocks.
	post("chat", e.clk.Now().UnixMilli()+60_000)
	if err := e.store.Disable(context.Background(), codex.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if status, _, body := e.post("/v1/credential/"+itoa(codex.ID)+"/block", `{"providerKey":"openai-codex:oauth","blockScope":"","blockedUntilMs":1e15}`); status != 404 || body != `{"error":"No credential with id=`+itoa(codex.ID)+`"}` {
		t.Fatalf("block on disabled row: %d %s", status, body)
	}
}

// TestBlockReachesStreamSubscribers: a capable stream gets an entry frame
// with the block; a 15.x stream gets no frame for it; upload replies
// never carry blocks.
func TestBlockReachesStreamSubscribers(t *testing.T) {
	e := newEnv(t)
	rec := e.upsert("anthropic", oauthCred("a@x.y", e.clk.Now().UnixMilli()+3_600_000))
	ctx := streamCtx(t)
	st, err := e.client.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ev, err := st.Next(); err != nil || ev.Kind != "snapshot" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	_, r15 := rawStream(t, e)
	if f := frame(t, r15); !strings.HasPrefix(f, "event: snapshot") {
		t.Fatalf("15.x first frame %q", f)
	}
	until := e.clk.Now().UnixMilli() + 60_000
	if err := e.client.PostBlock(ctx, rec.ID, vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "tier:fable", UntilMs: until}); err != nil {
		t.Fatal(err)
	}
	ev, err := st.Next()
	if err != nil || ev.Kind != "entry" || ev.Entry.ID != rec.ID {
		t.Fatalf("event %+v %v", ev, err)
	}
	if want := []vault.CredentialBlock{{ProviderKey: "anthropic:oauth", Scope: "tier:fable", UntilMs: until, UpdatedAtMs: e.clk.Now().UnixMilli() / 1000 * 1000}}; !slices.Equal(ev.Entry.Blocks, want) {
		t.Fatalf("entry blocks %+v, want %+v", ev.Entry.Blocks, want)
	}
	// The 15.x stream sees the next real change, not the block.
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-2"})
	if f := frame(t, r15); !strings.Contains(f, `"provider":"openai"`) || strings.Contains(f, "blocks") {
		t.Fatalf("15.x frame after block + upload: %q", f)
	}
	entries, err := e.client.Upload(ctx, "anthropic", oauthCred("a@x.y", e.clk.Now().UnixMilli()+7_200_000))
	if err != nil || len(entries) != 1 || entries[0].Blocks != nil {
		t.Fatalf("upload reply %+v %v", entries, err)
	}
}

// TestObservedUsageAndClients: schema 400s, normalisation and the
// 1000-entry bound, 5-minute merge,
// aggregation by (app, provider) through the client methods.
func TestObservedUsageAndClients(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"empty", "", 400, "Request body required"},
		{"empty object", "{}", 400, "installId must be a string (was missing)\nentries must be an array (was missing)"},
		{"entry with only at", `{"installId":"i","entries":[{"at":1}]}`, 400, "entries[0].provider must be a string (was missing)\nentries[0].model must be a string (was missing)\nentries[0].requests must be a number (was missing)\nentries[0].inputTokens must be a number (was missing)\nentries[0].outputTokens must be a number (was missing)\nentries[0].cacheReadTokens must be a number (was missing)\nentries[0].cacheWriteTokens must be a number (was missing)\nentries[0].costUsd must be a number (was missing)"},
		{"null hostname", `{"installId":"i","hostname":null,"entries":[]}`, 400, "hostname must be a string (was null)"},
		{"extra key", `{"installId":"i","entries":[],"foo":1}`, 400, "foo must be removed"},
		{"blank install id", `{"installId":"  ","entries":[]}`, 400, "installId must not be empty"},
		{"too many entries", `{"installId":"i","entries":[` + strings.Repeat(`{},`, 1000) + `{}]}`, 400, "entries must hold at most 1000 items (was 1001)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := e.post("/v1/usage/observed", c.body)
			var env struct{ Error string }
			_ = json.Unmarshal([]byte(body), &env)
			if status != c.status || env.Error != c.msg {
				t.Fatalf("%d %s, want %d %q", status, body, c.status, c.msg)
			}
		})
	}
	ctx := context.Background()
	now := e.clk.Now().UnixMilli()
	entry := func(at int64, provider string, in int64) api.ObservedUsageEntry {
		return api.ObservedUsageEntry{At: at, Provider: provider, Model: "m", Requests: 1, InputTokens: in, OutputTokens: 2, CostUsd: 0.25}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "inst-1", Hostname: "host-a", App: " omp ", Entries: []api.ObservedUsageEntry{
		entry(now, "anthropic", 10), entry(now+60_000, "anthropic", 10), entry(now, "openai", 1000),
		entry(1, "anthropic", -5), // implausible at → now; negative → 0
	}}))
	e.clk.Add(time.Second)
	must(e.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "inst-2"}))
	// Extra keys in entries are tolerated (obs).
	if status, _, body := e.post("/v1/usage/observed", `{"installId":"inst-1","entries":[{"at":1,"provider":"openai","model":"m","requests":1.9,"inputTokens":1,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"extra":true}]}`); status != 200 || body != `{"ok":true}` {
		t.Fatalf("tolerant entry: %d %s", status, body)
	}
	got, err := e.client.UsageClients(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Clients) != 2 || got.Clients[0].InstallID != "inst-1" || got.Clients[0].Hostname != "host-a" || got.Clients[1].Hostname != "" {
		t.Fatalf("clients %+v", got.Clients)
	}
	p := got.Clients[0].Providers
	// (app "omp" trimmed, openai) 1000 in; (omp, anthropic) three merged
	// entries; (no app, openai) the tolerant entry, requests 1.9 → 1.
	if len(p) != 3 || p[0].Provider != "openai" || p[0].App != "omp" || p[0].Requests != 1 || p[0].InputTokens != 1000 ||
		p[1].Provider != "anthropic" || p[1].Requests != 3 || p[1].InputTokens != 20 || p[1].CostUsd != 0.75 ||
		p[2].App != "" || p[2].Provider != "openai" || p[2].Requests != 1 {
		t.Fatalf("providers %+v", p)
	}
	if len(got.Clients[1].Providers) != 0 {
		t.Fatalf("inst-2 providers %+v", got.Clients[1].Providers)
	}
	status, _, body := e.get("/v1/usage/clients?sinceMs=" + itoa(now+10_000_000) + "abc")
	if status != 200 || !strings.Contains(body, `"providers":[]`) || strings.Contains(body, `"provider":"openai"`) {
		t.Fatalf("future window: %d %s", status, body)
	}
	if k := keys(t, json.RawMessage(body)); !slices.Equal(k, []string{"clients", "generatedAt"}) {
		t.Fatalf("keys %v", k)
	}
	// No generation bump for usage.
	g0, _ := e.store.Generation(ctx)
	must(e.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "inst-3"}))
	if g, _ := e.store.Generation(ctx); g != g0 {
		t.Fatal("observed usage moved the generation")
	}
}

func TestObservedUsageWithoutStoreIs501(t *testing.T) {
	e := newEnv(t, func(s *server.Server) { s.ClientUsage, s.Blocks = nil, nil })
	if status, _, body := e.post("/v1/usage/observed", `{"installId":"i","entries":[]}`); status != 501 || body != `{"error":"broker store does not persist client usage"}` {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, body := e.get("/v1/usage/clients"); status != 200 || !strings.Contains(body, `"clients":[]`) {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, _ := e.post("/v1/credential/1/block", `{"providerKey":"a:b","blockScope":"","blockedUntilMs":1}`); status != 404 {
		t.Fatalf("block without a block store: %d", status)
	}
}

func TestUsageStale(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	g0, _ := e.store.Generation(ctx)
	if err := e.client.MarkUsageStale(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.client.MarkUsageStale(ctx, "anthropic"); err != nil {
		t.Fatal(err)
	}
	if got := e.usage.invalidations(); !slices.Equal(got, []string{"", "anthropic"}) {
		t.Fatalf("invalidations %q", got)
	}
	if status, _, body := e.post("/v1/usage/stale", `{"provider":1}`); status != 400 || !strings.Contains(body, "provider must be a string") {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, _ := e.post("/v1/usage/stale", `{"foo":1}`); status != 400 {
		t.Fatalf("extra key: %d", status)
	}
	if g, _ := e.store.Generation(ctx); g != g0 {
		t.Fatal("stale moved the generation")
	}
}

// TestExternalBlockWriterReachesStream: a local-mode process writing a
// block into the same vault file advances the generation, so the broker's
// poll publishes it to stream subscribers.
func TestExternalBlockWriterReachesStream(t *testing.T) {
	e := newEnv(t)
	rec := e.upsert("anthropic", oauthCred("x@x.y", e.clk.Now().UnixMilli()+3_600_000))
	ctx := streamCtx(t)
	st, err := e.client.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ev, err := st.Next(); err != nil || ev.Kind != "snapshot" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	other := e.openSecondStore()
	until := e.clk.Now().UnixMilli() + 120_000
	if _, err := other.PutBlock(context.Background(), rec.ID, vault.CredentialBlock{ProviderKey: "anthropic:oauth", UntilMs: until}); err != nil {
		t.Fatal(err)
	}
	ev, err := st.Next()
	if err != nil || ev.Kind != "entry" || len(ev.Entry.Blocks) != 1 || ev.Entry.Blocks[0].UntilMs != until {
		t.Fatalf("event %+v %v, want the external block", ev, err)
	}
}
