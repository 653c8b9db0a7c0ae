package interopdiff

import "fmt"

// Step builders keep the table readable.

func up(provider, cred string, accept ...string) Step {
	return Step{Path: "/v1/credential", Body: `{"provider":"` + provider + `","credential":` + cred + `}`, Accept: accept}
}

func raw(body string, accept ...string) Step {
	return Step{Path: "/v1/credential", Body: body, Accept: accept}
}

// oauth is an OAuth credential expiring in 2100; extra is more JSON members
// (starting with a comma).
func oauth(access, refresh, extra string) string {
	return `{"type":"oauth","access":"` + access + `","refresh":"` + refresh + `","expires":{far}` + extra + `}`
}

func apiKey(key, extra string) string { return `{"type":"api_key","key":"` + key + `"` + extra + `}` }

func snap(caps bool, accept ...string) Step {
	return Step{Path: "/v1/snapshot", Caps: caps, Accept: accept}
}

func stream(caps bool, accept ...string) Step {
	return Step{Path: "/v1/snapshot/stream", Stream: true, Caps: caps, Accept: accept}
}

func refresh(n string, accept ...string) Step {
	return Step{Method: "POST", Path: "/v1/credential/{id" + n + "}/refresh", Accept: accept}
}

func disable(n, body string, accept ...string) Step {
	return Step{Method: "POST", Path: "/v1/credential/{id" + n + "}/disable", Body: body, Accept: accept}
}

var upstream = Step{Upstream: true}

// emptyRefresh uploads cred (its refresh token empty) under provider,
// refreshes it, and shows the token endpoint's requests and the snapshot.
func emptyRefresh(provider, cred string, more ...Step) []Step {
	return with([]Step{up(provider, cred), refresh("1", "ER"), {Upstream: true, Accept: []string{"ER"}}, snap(true)}, more...)
}

// Fleet step builders: blocks, usage cache and observed usage.
func block(n, body string, accept ...string) Step {
	return Step{Method: "POST", Path: "/v1/credential/{id" + n + "}/block", Body: body, Accept: accept}
}

func blockBody(key, scope, until string) string {
	return `{"providerKey":"` + key + `","blockScope":"` + scope + `","blockedUntilMs":` + until + `}`
}

func unblock(n string, accept ...string) Step {
	return Step{Method: "DELETE", Path: "/v1/credential/{id" + n + "}/blocks", Accept: accept}
}

func observed(body string, accept ...string) Step {
	return Step{Method: "POST", Path: "/v1/usage/observed", Body: body, Accept: accept}
}

// usageEntry is one ObservedUsageEntry at now + 1 minute.
func usageEntry(provider, model string, in int) string {
	return `{"at":{in1m},"provider":"` + provider + `","model":"` + model + `","requests":1,"inputTokens":` + fmt.Sprint(in) +
		`,"outputTokens":2,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.5}`
}

// blockViews: the capable view, the 15.x view (no blocks from ours: F1)
// and a header without codex-meter-block-scopes (Codex meters folded).
var blockViews = []Step{snap(true), snap(false, "F1"),
	{Path: "/v1/snapshot", Header: map[string]string{CapabilitiesHeader: "something-else"}}, stream(true)}

// both views of the vault: 18.1.21 (capabilities header) and 15.x (none,
// E1 gate).
var views = []Step{snap(true), snap(false, "E1"), stream(true), stream(false, "E1")}

func with(steps []Step, more ...Step) []Step { return append(append([]Step{}, steps...), more...) }

// MCP provider ids of the three shapes: profile-scoped, legacy server URL
// and random.
const (
	mcpProfile = "mcp_oauth:profile:default:http://127.0.0.1:9/mcp"
	mcpLegacy  = "mcp_oauth:https://mcp.example.test/sse"
	mcpRandom  = "mcp_oauth_k3j4h5"
)

// mcpMaterial is the refresh material an 18.1.21 MCP authorisation uploads.
const mcpMaterial = `,"tokenUrl":"{tokenUrl}/mcp/token","clientId":" mcp-client ","clientSecret":"mcp-secret","resource":"http://127.0.0.1:9/mcp","authorizationUrl":"http://127.0.0.1:9/authorize"`

// Sequences is the differential table: the same requests against both
// brokers, grouped by area.
var Sequences = []Sequence{
	// Uploads of every credential type, 15.x shape.
	{"upload anthropic oauth (15.x shape)", with([]Step{up("anthropic", oauth("at-a1", "ok-a1", `,"email":"A1@Example.com"`))}, views...)},
	{"upload openai-codex oauth (15.x shape)", with([]Step{up("openai-codex", oauth("at-c1", "ok-c1", `,"email":"c1@example.com","accountId":"acct-c1"`))}, views...)},
	{"upload google-gemini-cli oauth", with([]Step{up("google-gemini-cli", oauth("at-g1", "ok-g1", `,"email":"g1@example.com","projectId":"proj-g1"`))}, views...)},
	{"upload google-antigravity oauth", with([]Step{up("google-antigravity", oauth("at-ag1", "ok-ag1", `,"email":"ag1@example.com","projectId":"proj-ag1"`))}, views...)},
	{"upload google-antigravity with 18.1.21 extras", with([]Step{up("google-antigravity", oauth("at-ag2", "ok-ag2",
		`,"email":"ag2@example.com","projectId":"proj-ag2","authorizedAt":1765500000000,"apiEndpoint":"https://cloudcode.example.test"`))}, views...)},
	{"upload gitlab-duo with 18.1.21 extras", with([]Step{up("gitlab-duo", oauth("at-gl3", "ok-gl3",
		`,"enterpriseUrl":"https://gitlab.example.test","authorizedAt":1765500000000`))}, views...)},
	{"upload gitlab-duo oauth without identity, twice (two rows)", []Step{
		up("gitlab-duo", oauth("at-gl1", "ok-gl1", "")), up("gitlab-duo", oauth("at-gl2", "ok-gl2", "")), snap(true)}},
	{"upload openai api keys: same key once, other key beside", []Step{
		up("openai", apiKey("sk-o1", "")), up("openai", apiKey("sk-o1", "")), up("openai", apiKey("sk-o2", "")), snap(true), snap(false)}},
	{"upload zai api key with source login", with([]Step{up("zai", apiKey("zk-1", `,"source":"login"`))}, views...)},
	// 18.1.21 extras.
	{"upload anthropic with org extras", with([]Step{up("anthropic", oauth("at-a2", "ok-a2",
		`,"email":"a2@example.com","accountId":"acc-a2","orgId":"org-1","orgName":"Team One","authorizedAt":1765500000000`))}, views...)},
	{"upload openai-codex with workspace org", with([]Step{up("openai-codex", oauth("at-c2", "ok-c2",
		`,"email":"c2@example.com","accountId":"ws-1","orgId":"ws-1","orgName":"plus","authorizedAt":1765500000000`))}, views...)},
	{"upload anthropic with apiEndpoint and an extension key", with([]Step{up("anthropic", oauth("at-a3", "ok-a3",
		`,"email":"a3@example.com","apiEndpoint":"https://api.example.test","foo":{"bar":1}`))}, views...)},
	{"upload google-gemini-cli with orgId (org ignored outside anthropic/codex)", []Step{
		up("google-gemini-cli", oauth("at-g2", "ok-g2", `,"email":"g2@example.com","projectId":"proj-g2","orgId":"org-g"`)),
		up("google-gemini-cli", oauth("at-g3", "ok-g3", `,"email":"g2@example.com","projectId":"proj-g2"`)), snap(true)}},
	{"upload mcp_oauth:profile row with refresh material", with([]Step{up(mcpProfile, oauth("at-m1", "ok-m1", mcpMaterial))}, views...)},
	{"upload legacy mcp_oauth:<url> and mcp_oauth_<random> rows", []Step{
		up(mcpLegacy, oauth("at-m2", "ok-m2", `,"tokenUrl":"{tokenUrl}/legacy/token","clientId":"c2"`)),
		up(mcpRandom, oauth("at-m3", "ok-m3", `,"tokenUrl":"{tokenUrl}/random/token"`)), snap(true), snap(false, "E1")}},
	{"upload oauth with empty refresh (accepted by 18.1.21)", []Step{up("anthropic", oauth("at-a4", "", `,"email":"a4@example.com"`)), snap(true)}},
	{"upload login source on anthropic api key, then plain key", []Step{
		up("anthropic", apiKey("sk-ant-api-1", `,"source":"login"`)), up("anthropic", apiKey("sk-ant-api-2", "")), snap(true), snap(false, "E1")}},

	// Org variants and the one-way upgrade: an org-less row takes the org of
	// a later upload under the same email, never the other way.
	{"two organisations under one email stay two rows", []Step{
		up("anthropic", oauth("at-o1", "ok-o1", `,"email":"o@example.com","orgId":"org-1"`)),
		up("anthropic", oauth("at-o2", "ok-o2", `,"email":"o@example.com","orgId":"org-2"`)), snap(true)}},
	{"org upgrade: email row upgraded in place by email+org", []Step{
		up("anthropic", oauth("at-u1", "ok-u1", `,"email":"u@example.com"`)),
		up("anthropic", oauth("at-u2", "ok-u2", `,"email":"u@example.com","orgId":"org-1","orgName":"One"`)), snap(true)}},
	{"no downgrade: org-less upload inserts beside the org row", []Step{
		up("anthropic", oauth("at-d1", "ok-d1", `,"email":"d@example.com","orgId":"org-1"`)),
		up("anthropic", oauth("at-d2", "ok-d2", `,"email":"d@example.com"`)), snap(true)}},
	{"org-only identity, re-upload replaces", []Step{
		up("anthropic", oauth("at-r1", "ok-r1", `,"orgId":"org-9"`)),
		up("anthropic", oauth("at-r2", "ok-r2", `,"orgId":"org-9"`)), snap(true)}},
	{"org upgrade from an org-only row", []Step{
		up("anthropic", oauth("at-r3", "ok-r3", `,"orgId":"org-8"`)),
		up("anthropic", oauth("at-r4", "ok-r4", `,"email":"r@example.com","orgId":"org-8"`)), snap(true)}},
	{"account-only anthropic identity", []Step{
		up("anthropic", oauth("at-ac1", "ok-ac1", `,"accountId":"only-acc"`)),
		up("anthropic", oauth("at-ac2", "ok-ac2", `,"accountId":"only-acc"`)), snap(true)}},
	{"email case folds into one identity", []Step{
		up("anthropic", oauth("at-e1", "ok-e1", `,"email":"Case@Example.COM"`)),
		up("anthropic", oauth("at-e2", "ok-e2", `,"email":"case@example.com"`)), snap(true)}},
	{"codex workspace upgrade (account = org)", []Step{
		up("openai-codex", oauth("at-w1", "ok-w1", `,"email":"w@example.com","accountId":"ws-2"`)),
		up("openai-codex", oauth("at-w2", "ok-w2", `,"email":"w@example.com","accountId":"ws-2","orgId":"ws-2","orgName":"team"`)), snap(true)}},

	// API key then OAuth for one provider (18.1.21: the key is replaced).
	{"zai api key then zai oauth", []Step{
		up("zai", apiKey("zk-2", "")), up("zai", oauth("at-z1", "ok-z1", `,"email":"z@example.com"`)), snap(true)}},
	{"anthropic api key then oauth", []Step{
		up("anthropic", apiKey("sk-ant-api-3", "")), up("anthropic", oauth("at-k1", "ok-k1", `,"email":"k@example.com"`)), snap(true)}},
	{"anthropic oauth then api key (both kept)", []Step{
		up("anthropic", oauth("at-k2", "ok-k2", `,"email":"k2@example.com"`)), up("anthropic", apiKey("sk-ant-api-4", "")), snap(true)}},

	// Disable.
	{"disable with default cause, then again (404)", []Step{
		up("openai", apiKey("sk-dis-1", "")), disable("1", ""), snap(true), disable("1", "")}},
	{"disable with a cause and with {}", []Step{
		up("openai", apiKey("sk-dis-2", "")), up("openai", apiKey("sk-dis-3", "")),
		disable("1", `{"cause":"rotated by operator"}`), disable("2", `{}`), snap(true)}},
	{"disable with bad bodies", []Step{
		up("openai", apiKey("sk-dis-4", "")), disable("1", `{"cause":1}`, "B6"), disable("1", `{"reason":"x"}`, "B6"),
		disable("1", `{nope`, "B6"), snap(true)}},
	{"re-upload after disable gets a new id", []Step{
		up("anthropic", oauth("at-re1", "ok-re1", `,"email":"re@example.com","orgId":"org-re"`)), disable("1", ""),
		up("anthropic", oauth("at-re2", "ok-re2", `,"email":"re@example.com","orgId":"org-re"`)), snap(true), disable("1", "")}},
	{"disable unknown and malformed ids", []Step{
		disable("9", ""), {Method: "POST", Path: "/v1/credential/abc/disable"}, {Method: "POST", Path: "/v1/credential/1/disable/"}}},

	// Refresh against the fake token endpoint.
	{"refresh anthropic: success rotates the refresh token", []Step{
		up("anthropic", oauth("at-f1", "ok-f1", `,"email":"f1@example.com"`)), refresh("1"), upstream, refresh("1", "RL"),
		{Upstream: true, Accept: []string{"RL"}}, snap(true, "RL")}},
	{"refresh anthropic: invalid_grant disables", []Step{
		up("anthropic", oauth("at-f2", "bad-f2", `,"email":"f2@example.com"`)), refresh("1", "E4"), upstream, snap(true)}},
	{"refresh anthropic: upstream timeout keeps the row", []Step{
		up("anthropic", oauth("at-f3", "slow-f3", `,"email":"f3@example.com"`)), refresh("1", "R3T"), snap(true)}},
	{"refresh anthropic keeps org and extension keys", []Step{
		up("anthropic", oauth("at-f4", "ok-f4", `,"email":"f4@example.com","orgId":"org-4","orgName":"Four","authorizedAt":1765500000000,"foo":"kept"`)),
		refresh("1", "E5"), snap(true, "E5")}},
	{"refresh openai-codex: success", []Step{
		up("openai-codex", oauth("at-f5", "ok-f5", `,"email":"f5@example.com","accountId":"acct-f5"`)), refresh("1"), upstream, snap(true)}},
	{"refresh openai-codex with workspace org: org kept", []Step{
		up("openai-codex", oauth("at-f7", "ok-f7", `,"email":"f7@example.com","accountId":"ws-7","orgId":"ws-7","orgName":"team"`)),
		refresh("1", "E5"), upstream, snap(true, "E5")}},
	{"refresh openai-codex: invalid_grant disables", []Step{
		up("openai-codex", oauth("at-f8", "bad-f8", `,"email":"f8@example.com","accountId":"acct-f8"`)), refresh("1", "E4"), upstream, snap(true)}},
	{"refresh google-antigravity: success", []Step{
		up("google-antigravity", oauth("at-f9", "ok-f9", `,"email":"f9@example.com","projectId":"proj-f9"`)), refresh("1"), upstream, snap(true)}},
	{"refresh google-gemini-cli: success", []Step{
		up("google-gemini-cli", oauth("at-f10", "ok-f10", `,"email":"f10@example.com","projectId":"proj-f10"`)), refresh("1"), upstream, snap(true)}},
	{"refresh gitlab-duo: success", []Step{
		up("gitlab-duo", oauth("at-f11", "ok-f11", "")), refresh("1"), upstream, snap(true)}},
	{"refresh an api key (not OAuth)", []Step{up("openai", apiKey("sk-f6", "")), refresh("1", "AK")}},
	// An OAuth row uploaded with an empty refresh token (both accept it)
	// meets a refresh: both brokers answer 500 and keep the row (ER).
	{"refresh anthropic uploaded with an empty refresh token", emptyRefresh("anthropic", oauth("at-er1", "", `,"email":"er1@example.com"`), snap(false))},
	{"refresh anthropic with org extras uploaded with an empty refresh token", emptyRefresh("anthropic",
		oauth("at-er7", "", `,"email":"er7@example.com","orgId":"org-er7","orgName":"Seven","authorizedAt":1765500000000`))},
	{"refresh openai-codex uploaded with an empty refresh token", emptyRefresh("openai-codex",
		oauth("at-er2", "", `,"email":"er2@example.com","accountId":"acct-er2"`))},
	{"refresh google-gemini-cli uploaded with an empty refresh token", emptyRefresh("google-gemini-cli",
		oauth("at-er4", "", `,"email":"er4@example.com","projectId":"proj-er4"`))},
	{"refresh google-antigravity uploaded with an empty refresh token", emptyRefresh("google-antigravity",
		oauth("at-er5", "", `,"email":"er5@example.com","projectId":"proj-er5"`))},
	{"refresh gitlab-duo uploaded with an empty refresh token", emptyRefresh("gitlab-duo", oauth("at-er6", "", ""))},
	{"refresh mcp uploaded with an empty refresh token", emptyRefresh(mcpProfile, oauth("at-er3", "", mcpMaterial))},
	{"refresh unknown and malformed ids", []Step{refresh("9"), {Method: "POST", Path: "/v1/credential/x/refresh"}, {Method: "GET", Path: "/v1/credential/1/refresh"}}},

	// MCP OAuth refresh: a refresh_token grant to the row's tokenUrl.
	{"mcp refresh: success through the row's tokenUrl", []Step{
		up(mcpProfile, oauth("at-mf1", "ok-mf1", mcpMaterial)), refresh("1", "E5"), upstream, snap(true, "E5")}},
	{"mcp refresh: invalid_grant disables", []Step{
		up(mcpProfile, oauth("at-mf2", "bad-mf2", mcpMaterial)), refresh("1", "E4"), upstream, snap(true)}},
	{"mcp refresh: missing refresh material", []Step{
		up(mcpRandom, oauth("at-mf3", "ok-mf3", `,"clientId":"c3"`)), refresh("1"), snap(true)}},
	{"mcp refresh: resource recovered from the provider id", []Step{
		up(mcpLegacy, oauth("at-mf4", "ok-mf4", `,"tokenUrl":"{tokenUrl}/legacy/token","clientId":"c4"`)), refresh("1", "E5"), upstream}},

	// Snapshot and stream.
	{"empty vault: snapshot and stream, with and without capabilities", with(nil, views...)},
	{"mixed vault: stream first frames", []Step{
		up("anthropic", oauth("at-s1", "ok-s1", `,"email":"s1@example.com","orgId":"org-s"`)),
		up("openai", apiKey("sk-s2", `,"source":"login"`)),
		up(mcpProfile, oauth("at-s3", "ok-s3", mcpMaterial)),
		stream(true), stream(false, "E1"), snap(true), snap(false, "E1"),
		// Any value of the header opens the gate.
		{Path: "/v1/snapshot", Header: map[string]string{CapabilitiesHeader: "something-else"}}}},
	{"long-poll query and If-None-Match variants", []Step{
		{Path: "/v1/snapshot?wait=abc"}, {Path: "/v1/snapshot?wait=-5"}, {Path: "/v1/snapshot?wait=0"},
		{Path: "/v1/snapshot?wait=200", Header: map[string]string{"If-None-Match": `"not-a-generation"`}},
		{Path: "/v1/snapshot?wait=200", Header: map[string]string{"If-None-Match": `W/"1"`}}}},

	// Malformed uploads.
	{"malformed: not JSON, empty body", []Step{raw(`{"provider":`, "B6"), {Method: "POST", Path: "/v1/credential"}, snap(true)}},
	{"malformed: wrong types", []Step{
		raw(`{"provider":1,"credential":{"type":"api_key","key":"k"}}`, "B6"),
		up("anthropic", `{"type":"oauth","access":"a","refresh":"r","expires":"soon"}`, "B6"),
		up("anthropic", oauth("a", "r", `,"orgId":1`), "B6"),
		up("anthropic", oauth("a", "r", `,"authorizedAt":"yesterday"`), "B6"),
		up("openai", apiKey("k", `,"source":"other"`), "B6"), snap(true)}},
	{"malformed: missing fields", []Step{
		raw(`{"provider":"anthropic"}`, "B6"), raw(`{"credential":{"type":"api_key","key":"k"}}`, "B6"),
		up("anthropic", `{"type":"oauth","refresh":"r","expires":1}`, "B6"),
		up("openai", `{"type":"api_key"}`, "B6"), up("", apiKey("k", ""), "B6"), snap(true)}},
	{"malformed: extra keys, unknown type, sentinel", []Step{
		up("openai", apiKey("k", `,"foo":1`), "B6"), raw(`{"provider":"openai","credential":{"type":"api_key","key":"k"},"extra":true}`, "B6"),
		up("openai", `{"type":"cookie","value":"c"}`, "B6"),
		up("anthropic", oauth("a", "__remote__", ""), "B1"), snap(true)}},
	{"malformed: oversize body", []Step{up("openai", apiKey("{big}", ""), "B30"), snap(true, "B30")}},
	// Fleet: blocks.
	{"block post: schema and lookup errors", []Step{
		up("openai", apiKey("sk-b1", "")),
		block("1", ""), block("1", "{}", "B6"), block("1", "[]", "B6"),
		block("1", `{"providerKey":"","blockScope":"","blockedUntilMs":1}`, "B6"),
		block("1", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":"1"}`, "B6"),
		block("1", `{"providerKey":"openai:api_key","blockScope":null,"blockedUntilMs":1}`, "B6"),
		block("1", `{"providerKey":"openai:api_key","blockScope":"","blockedUntilMs":1,"foo":1}`, "B6"),
		block("9", blockBody("openai:api_key", "", "{in5m}")), block("9", "{}", "B6"),
		{Method: "POST", Path: "/v1/credential/abc/block", Body: "{}"}, {Path: "/v1/credential/{id1}/block"},
		snap(true)}},
	{"block post: foreign providerKey (F3)", []Step{
		up("openai", apiKey("sk-b2", "")), block("1", blockBody("a:b", "", "{in5m}"), "F3"), snap(true, "F3")}},
	{"block on an api key, then delete", with([]Step{
		up("openai", apiKey("sk-b3", "")), block("1", blockBody("openai:api_key", "", "{in10m}")),
		block("1", blockBody("openai:api_key", "", "{in5m}"))}, with(blockViews, unblock("1"), snap(true), unblock("9"),
		Step{Method: "DELETE", Path: "/v1/credential/abc/blocks"}, Step{Method: "DELETE", Path: "/v1/credential/{id1}/block"})...)},
	{"codex meter blocks: shared splits into chat and spark", with([]Step{
		up("openai-codex", oauth("at-cb1", "ok-cb1", `,"email":"cb1@example.com","accountId":"acct-cb1"`)),
		block("1", blockBody("openai-codex:oauth", "chat", "{in5m}")), block("1", blockBody("openai-codex:oauth", "spark", "{in15m}")),
		block("1", blockBody("openai-codex:oauth", "shared", "{in10m}")),
		block("1", blockBody("openai-codex:oauth", "model-policy:gpt-x", "{in20m}"))}, blockViews...)},
	{"block deadlines: past, far future (F2)", []Step{
		up("anthropic", oauth("at-bd1", "ok-bd1", `,"email":"bd1@example.com"`)),
		block("1", blockBody("anthropic:oauth", "tier:fable", "1")), block("1", blockBody("anthropic:oauth", "", "1e15")),
		snap(true, "F2")}},
	{"blocks of a disabled row: 404 and gone", []Step{
		up("anthropic", oauth("at-bx1", "ok-bx1", `,"email":"bx1@example.com"`)), block("1", blockBody("anthropic:oauth", "", "{in5m}")),
		disable("1", ""), block("1", blockBody("anthropic:oauth", "", "{in5m}")), unblock("1"), snap(true)}},

	// Fleet: usage cache and observed usage.
	{"usage stale: no body, provider body, unknown key (F5)", []Step{
		{Method: "POST", Path: "/v1/usage/stale"}, {Method: "POST", Path: "/v1/usage/stale", Body: `{"provider":"anthropic"}`},
		{Method: "POST", Path: "/v1/usage/stale", Body: `{"foo":1}`, Accept: []string{"F5"}}, {Path: "/v1/usage/stale"}}},
	{"observed usage: schema errors", []Step{
		observed(""), observed("{}", "B6"), observed(`{"installId":"i","entries":[{"at":1}]}`, "B6"),
		observed(`{"installId":"i","hostname":null,"entries":[]}`, "B6"), observed(`{"installId":"i","entries":[],"foo":1}`, "B6")}},
	{"observed usage: merge and per-client sums", []Step{
		observed(`{"installId":"diff-install-1","hostname":"host-1","app":" omp ","entries":[` + usageEntry("anthropic", "m1", 10) + `,` +
			usageEntry("anthropic", "m1", 20) + `,` + usageEntry("openai", "m2", 1000) + `]}`),
		observed(`{"installId":"diff-install-2","entries":[]}`),
		{Path: "/v1/usage/clients"}, {Path: "/v1/usage/clients?sinceMs=99999999999999"}}},
	{"observed usage: Go bounds (F9)", []Step{
		observed(`{"installId":"   ","entries":[]}`, "F9"),
		observed(`{"installId":"diff-install-3","entries":[` + usageEntry("anthropic", "m3", -5) + `]}`),
		{Path: "/v1/usage/clients", Accept: []string{"F9"}}}},

	{"unauthorized and unknown routes", []Step{
		{Path: "/v1/snapshot", NoAuth: true}, {Path: "/v1/nope"}, {Method: "DELETE", Path: "/v1/credential"}, {Path: "/v1/healthz"}}},
}
