package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

func TestMigrateRequiresBrokerThenSource(t *testing.T) {
	const noBroker = "error: OMP_AUTH_BROKER_URL must be set (or `auth.broker.url` in config.yml). `migrate` uploads local credentials to a configured broker.\n"
	const noSource = "error: `omp auth-broker migrate` requires an explicit source. Pass `--from-local` to migrate from the local SQLite store and env vars.\n"
	b := startBroker(t, "")
	tests := []struct {
		name    string
		broker  bool
		args    []string
		wantErr string
	}{
		{"no broker", false, []string{"--from-local"}, noBroker},
		{"no broker is checked before the source", false, nil, noBroker},
		{"no source", true, nil, noSource},
		{"no source even with other flags", true, []string{"--include-env", "--dry-run"}, noSource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			if tt.broker {
				c.useBroker(b)
			}
			r := c.run("", append([]string{"auth-broker", "migrate"}, tt.args...)...)
			if r.code != 1 || r.stdout != "" || r.stderr != tt.wantErr {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			for _, db := range []string{c.agentDB(), c.vaultDB()} {
				if _, err := os.Stat(db); err == nil {
					t.Errorf("a failed migrate created %s", db)
				}
			}
		})
	}
}

// migrateScene is a local Go vault, a broker that already holds a groq key
// and API keys in the environment.
func migrateScene(t *testing.T) (*cli, *testBroker) {
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("groq", "gsk-broker"))
	c := newCLI(t)
	c.useBroker(b)
	c.seed(
		apiKeyCred("openai", "sk-local-1"),
		oauthCred("anthropic", "me@x.io", "rt-local-me"),
		apiKeyCred("openai", "sk-local-2"),
		apiKeyCred("google-vertex", "<authenticated>"),
		apiKeyCred("groq", "gsk-local"),
		providerCred{"openai-codex", oauthCred("", "", "rt-codex-anon").cred},
	)
	c.env["OPENAI_API_KEY"] = "sk-env-openai"
	c.env["GROQ_API_KEY"] = "gsk-env"
	c.env["CEREBRAS_API_KEY"] = "csk-env-cerebras"
	c.env["AWS_PROFILE"] = "default" // amazon-bedrock → <authenticated>: ignored silently
	return c, b
}

var migrateSecrets = []string{"sk-local-1", "sk-local-2", "rt-local-me", "acc-rt-local-me", "gsk-local", "gsk-broker",
	"rt-codex-anon", "sk-env-openai", "gsk-env", "csk-env-cerebras"}

const (
	skipOAuthMe    = "skip [local-sqlite] anthropic me@x.io: OAuth from local SQLite skipped by default (use --include-oauth)"
	skipSecondKey  = "skip [local-sqlite] openai (api key): another local api_key for this provider already planned"
	skipSentinel   = "skip [local-sqlite] google-vertex (api key): placeholder sentinel '<authenticated>' is not a real key"
	skipGroqLocal  = "skip [local-sqlite] groq (api key): already on broker"
	skipOAuthCodex = "skip [local-sqlite] openai-codex <openai-codex oauth>: OAuth from local SQLite skipped by default (use --include-oauth)"
	skipEnvOpenAI  = "skip [env] openai (api key): local SQLite already supplied an api_key for this provider"
	skipEnvGroq    = "skip [env] groq (api key): already on broker (provider has an api_key)"
)

func TestMigrateFromLocal(t *testing.T) {
	tests := []struct {
		name      string
		flags     []string
		wantOut   []string
		wantState []string
	}{
		{"api keys only by default", nil,
			[]string{skipOAuthMe, skipSecondKey, skipSentinel, skipGroqLocal, skipOAuthCodex,
				"uploaded [local-sqlite] openai (api key)"},
			[]string{"groq key=gsk-broker", "openai key=sk-local-1"}},
		{"dry run uploads nothing", []string{"--include-oauth", "--include-env", "--dry-run"},
			[]string{skipSecondKey, skipSentinel, skipGroqLocal, skipEnvOpenAI, skipEnvGroq,
				"Dry run — would upload 4 credential(s):",
				"  [local-sqlite] openai (api key)",
				"  [local-sqlite] anthropic me@x.io",
				"  [local-sqlite] openai-codex <openai-codex oauth>",
				"  [env] cerebras (api key)"},
			[]string{"groq key=gsk-broker"}},
		{"include oauth and env", []string{"--include-oauth", "--include-env"},
			[]string{skipSecondKey, skipSentinel, skipGroqLocal, skipEnvOpenAI, skipEnvGroq,
				"uploaded [local-sqlite] openai (api key)",
				"uploaded [local-sqlite] anthropic me@x.io",
				"uploaded [local-sqlite] openai-codex <openai-codex oauth>",
				"uploaded [env] cerebras (api key)"},
			[]string{"anthropic oauth=me@x.io", "cerebras key=csk-env-cerebras", "groq key=gsk-broker",
				"openai key=sk-local-1", "openai-codex oauth="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, b := migrateScene(t)
			r := c.run("", append([]string{"auth-broker", "migrate", "--from-local"}, tt.flags...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
			}
			wantLines(t, r.stdout, tt.wantOut...)
			if got := b.state(t); !slices.Equal(got, tt.wantState) {
				t.Fatalf("broker\ngot  %q\nwant %q", got, tt.wantState)
			}
			assertNoSecrets(t, r, append(migrateSecrets, b.token)...)
		})
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	c, b := migrateScene(t)
	c.ok("", "auth-broker", "migrate", "--from-local", "--include-oauth", "--include-env")
	out := c.ok("", "auth-broker", "migrate", "--from-local", "--include-oauth", "--include-env")
	wantLines(t, out,
		"skip [local-sqlite] openai (api key): already on broker",
		"skip [local-sqlite] anthropic me@x.io: already on broker",
		"skip [local-sqlite] openai (api key): already on broker",
		skipSentinel,
		skipGroqLocal,
		"skip [env] openai (api key): already on broker (provider has an api_key)",
		"skip [env] groq (api key): already on broker (provider has an api_key)",
		"skip [env] cerebras (api key): already on broker (provider has an api_key)",
		// An identity-less OAuth row cannot be matched against the broker,
		// so it is uploaded again and the broker inserts another row
		// (reference behaviour: no identity, no dedupe).
		"uploaded [local-sqlite] openai-codex <openai-codex oauth>",
	)
	want := []string{"anthropic oauth=me@x.io", "cerebras key=csk-env-cerebras", "groq key=gsk-broker",
		"openai key=sk-local-1", "openai-codex oauth=", "openai-codex oauth="}
	if got := b.state(t); !slices.Equal(got, want) {
		t.Fatalf("broker after the re-run\ngot  %q\nwant %q", got, want)
	}
	out = c.ok("", "auth-broker", "migrate", "--from-local", "--include-env")
	wantLines(t, out,
		"skip [local-sqlite] openai (api key): already on broker",
		skipOAuthMe,
		"skip [local-sqlite] openai (api key): already on broker",
		skipSentinel,
		skipGroqLocal,
		skipOAuthCodex,
		"skip [env] openai (api key): already on broker (provider has an api_key)",
		"skip [env] groq (api key): already on broker (provider has an api_key)",
		"skip [env] cerebras (api key): already on broker (provider has an api_key)",
		"Nothing to migrate.",
	)
}

func TestMigrateJSON(t *testing.T) {
	c, b := migrateScene(t)
	r := c.run("", "auth-broker", "migrate", "--from-local", "--include-env", "--dry-run", "--json")
	want := `{"dryRun":true,"plan":[` +
		`{"source":"local-sqlite","provider":"openai","identity":"(api key)"},` +
		`{"source":"env","provider":"cerebras","identity":"(api key)"}` +
		`],"skipped":[` +
		`{"source":"local-sqlite","provider":"anthropic","identity":"me@x.io","reason":"OAuth from local SQLite skipped by default (use --include-oauth)"},` +
		`{"source":"local-sqlite","provider":"openai","identity":"(api key)","reason":"another local api_key for this provider already planned"},` +
		`{"source":"local-sqlite","provider":"google-vertex","identity":"(api key)","reason":"placeholder sentinel '\u003cauthenticated\u003e' is not a real key"},` +
		`{"source":"local-sqlite","provider":"groq","identity":"(api key)","reason":"already on broker"},` +
		`{"source":"local-sqlite","provider":"openai-codex","identity":"\u003copenai-codex oauth\u003e","reason":"OAuth from local SQLite skipped by default (use --include-oauth)"},` +
		`{"source":"env","provider":"openai","identity":"(api key)","reason":"local SQLite already supplied an api_key for this provider"},` +
		`{"source":"env","provider":"groq","identity":"(api key)","reason":"already on broker (provider has an api_key)"}` +
		`]}` + "\n"
	if r.code != 0 || r.stderr != "" || r.stdout != want {
		t.Fatalf("exit %d stderr %q\ngot  %s\nwant %s", r.code, r.stderr, r.stdout, want)
	}
	if got := b.state(t); !slices.Equal(got, []string{"groq key=gsk-broker"}) {
		t.Fatalf("dry run changed the broker: %q", got)
	}
	// Without --dry-run the summary says dryRun false and the keys land.
	r = c.run("", "auth-broker", "migrate", "--from-local", "--include-env", "--json")
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"dryRun":false,"plan":[`) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := b.state(t); !slices.Equal(got, []string{"cerebras key=csk-env-cerebras", "groq key=gsk-broker", "openai key=sk-local-1"}) {
		t.Fatalf("broker after migrate --json: %q", got)
	}
	assertNoSecrets(t, r, migrateSecrets...)
}

// TestMigrateFromPlainReferenceDB migrates a reference install: its plain
// agent.db is read (never written) even beside a Go vault.
func TestMigrateFromPlainReferenceDB(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	writeRefDB(t, c.agentDB(), refRows)
	before := fileBytes(t, c.agentDB())
	r := c.run("", "auth-broker", "migrate", "--from-local", "--include-oauth")
	if !bytes.Equal(before, fileBytes(t, c.agentDB())) {
		t.Error("migrate changed the reference agent.db")
	}
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout,
		"uploaded [local-sqlite] anthropic ref@x.io",
		"uploaded [local-sqlite] openai (api key)",
		"uploaded [local-sqlite] google-antigravity p7",
	)
	want := []string{"anthropic oauth=ref@x.io", "google-antigravity oauth=p7", "openai key=sk-ref-openai"}
	if got := b.state(t); !slices.Equal(got, want) {
		t.Fatalf("broker\ngot  %q\nwant %q", got, want)
	}
	assertNoSecrets(t, r, refSecrets...)
	// Reading the reference store created no vault key next to it.
	if _, err := os.Stat(c.vaultKey()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("migrate from a plain agent.db created %s (stat: %v)", c.vaultKey(), err)
	}
}

func TestMigrateUploadFailureExitsOne(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	// A reference row without an access token: the broker rejects it (400;
	// an empty refresh token is accepted since 18.1.21).
	writeRefDB(t, c.agentDB(), `INSERT INTO auth_credentials (provider, credential_type, data) VALUES
		('anthropic', 'oauth', '{"refresh":"acc-norefresh-secret","expires":4070908800000,"email":"half@x.io"}'),
		('openai', 'api_key', '{"key":"sk-fine-secret"}')`)
	const msg = "Auth broker request failed: 400 Bad Request"

	r := c.run("", "auth-broker", "migrate", "--from-local", "--include-oauth")
	if r.code != 1 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout, "failed [local-sqlite] anthropic: "+msg, "uploaded [local-sqlite] openai (api key)")
	assertNoSecrets(t, r, "acc-norefresh-secret", "sk-fine-secret")

	r = c.run("", "auth-broker", "migrate", "--from-local", "--include-oauth", "--json")
	if r.code != 1 || r.stderr != "" {
		t.Fatalf("json: exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout,
		`{"dryRun":false,"plan":[{"source":"local-sqlite","provider":"anthropic","identity":"half@x.io"}],`+
			`"skipped":[{"source":"local-sqlite","provider":"openai","identity":"(api key)","reason":"already on broker"}]}`,
		`{"error":"`+msg+`","provider":"anthropic"}`)
	if got := b.state(t); !slices.Equal(got, []string{"openai key=sk-fine-secret"}) {
		t.Fatalf("broker: %q", got)
	}
}

// TestMigrateUnreachableBrokerSaysWhy: a broker that does not answer is not
// a wrong token; the failure line keeps the cause.
func TestMigrateUnreachableBrokerSaysWhy(t *testing.T) {
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = "http://"+closedAddr(t), "tok-unreachable"
	r := c.run("", "auth-broker", "migrate", "--from-local", "--dry-run")
	const prefix = "error: Auth broker returned no snapshot: "
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, prefix) || len(r.stderr) == len(prefix)+1 ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertNoSecrets(t, r, "tok-unreachable")
}

// TestMigrateFrom18xReferenceDB migrates an 18.1.21 install (auth schema 7):
// two organisations under one email stay two broker rows, the login API key
// and the MCP row keep their fields, and a re-run finds everything already
// on the broker (18.1.21 org-qualified matching) instead of re-uploading.
func TestMigrateFrom18xReferenceDB(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	sqlitetest.WriteReference(t, c.agentDB(), sqlitetest.ReferenceSchemaV7,
		`INSERT INTO auth_credentials (id, provider, credential_type, data, identity_key) VALUES
		(1, 'anthropic', 'oauth', '{"access":"acc-org1-secret","refresh":"ref-org1-secret","expires":4070908800000,"email":"me@x.io","orgId":"org-1","orgName":"Team"}', 'email:me@x.io|org:org-1'),
		(2, 'anthropic', 'oauth', '{"access":"acc-org2-secret","refresh":"ref-org2-secret","expires":4070908800000,"email":"me@x.io","orgId":"org-2"}', 'email:me@x.io|org:org-2'),
		(3, 'zai', 'api_key', '{"key":"sk-zai-secret","source":"login"}', NULL),
		(4, 'mcp_oauth:profile:default:https://mcp.example/sse', 'oauth', '{"access":"acc-mcp-secret","refresh":"ref-mcp-secret","expires":4070908800000,"orgId":"org-m","tokenUrl":"https://mcp.example/token"}', NULL)`)
	r := c.run("", "auth-broker", "migrate", "--from-local", "--include-oauth")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout,
		"uploaded [local-sqlite] anthropic me@x.io",
		"uploaded [local-sqlite] anthropic me@x.io",
		"uploaded [local-sqlite] zai (api key)",
		"uploaded [local-sqlite] mcp_oauth:profile:default:https://mcp.example/sse <mcp_oauth:profile:default:https://mcp.example/sse oauth>",
	)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := b.client.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range res.Snapshot.Credentials {
		keys = append(keys, e.Provider+" "+e.IdentityKey+" "+e.Credential.OrgID()+e.Credential.Source+e.Credential.ExtraString("tokenUrl"))
	}
	want := []string{"anthropic email:me@x.io|org:org-1 org-1", "anthropic email:me@x.io|org:org-2 org-2", "zai  login",
		"mcp_oauth:profile:default:https://mcp.example/sse  org-mhttps://mcp.example/token"}
	if !slices.Equal(keys, want) {
		t.Fatalf("broker rows\ngot  %q\nwant %q", keys, want)
	}
	r = c.run("", "auth-broker", "migrate", "--from-local", "--include-oauth")
	if r.code != 0 {
		t.Fatalf("re-run exit %d\n%s", r.code, r.stdout)
	}
	wantLines(t, r.stdout,
		"skip [local-sqlite] anthropic me@x.io: already on broker",
		"skip [local-sqlite] anthropic me@x.io: already on broker",
		"skip [local-sqlite] zai (api key): already on broker",
		"skip [local-sqlite] mcp_oauth:profile:default:https://mcp.example/sse <mcp_oauth:profile:default:https://mcp.example/sse oauth>: already on broker",
		"Nothing to migrate.",
	)
	assertNoSecrets(t, r, "acc-org1-secret", "ref-org1-secret", "sk-zai-secret", "ref-mcp-secret")
}
