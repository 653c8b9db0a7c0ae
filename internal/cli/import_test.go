package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureDir is the CLIProxyAPI auth directory written from the documented
// shapes: five importable files of four types, six
// skipped files, a non-JSON file and a subdirectory (both ignored).
func fixtureDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "cliproxy"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// fixtureSecrets are every token in the fixtures.
var fixtureSecrets = []string{
	"ya29.ag-access-secret", "1//ag-refresh-secret", "sk-ant-oat01-bad-secret", "sk-ant-ort01-bad-secret",
	"sk-ant-oat01-dev-access-secret", "sk-ant-ort01-dev-refresh-secret", "eyJ.codex-access-secret",
	"rt_codex-refresh-secret", "sk-ant-oat01-off-secret", "sk-ant-ort01-off-secret", "ya29.old-access-secret",
	"1//old-refresh-secret", "ya29.gem-access-secret", "1//gem-refresh-secret", "cs-secret", "kimi-access-secret",
	"kimi-refresh-secret", "eyJ.half-access-secret", "vertex-key-secret", "nested-access-secret",
}

// fixtureSkips are the skip lines of the fixture directory, in path order.
func fixtureSkips(dir string) []string {
	return []string{
		"skip " + dir + "/bad-expiry.json: cannot parse expired=tomorrow",
		"skip " + dir + "/broken.json: unreadable JSON: unexpected end of JSON input",
		"skip " + dir + "/disabled-claude.json: credential marked disabled (use --include-disabled to import anyway)",
		"skip " + dir + "/kimi.json: cannot determine omp provider from type=kimi (pass --provider to override)",
		"skip " + dir + "/missing-tokens.json: missing access_token or refresh_token",
		"skip " + dir + "/vertex.json: cannot determine omp provider from type=vertex (pass --provider to override)",
	}
}

// fixtureDescs are the <desc> of the importable fixtures, in path order.
func fixtureDescs(dir string) []string {
	return []string{
		"google-antigravity: ag@gmail.com from " + dir + "/antigravity-ag.json",
		"anthropic: dev@x.io from " + dir + "/claude-dev.json",
		"openai-codex: codex@x.io from " + dir + "/codex-acc.json",
		"google-gemini-cli: old@gmail.com [expired] from " + dir + "/gemini-cli-plugin.json",
		"google-gemini-cli: gem@gmail.com from " + dir + "/gemini-legacy.json",
	}
}

var fixtureBrokerState = []string{
	"anthropic oauth=dev@x.io",
	"google-antigravity oauth=ag@gmail.com",
	"google-gemini-cli oauth=gem@gmail.com",
	"google-gemini-cli oauth=old@gmail.com",
	"openai-codex oauth=codex@x.io",
}

func prefixed(prefix, suffix string, items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = prefix + s + suffix
	}
	return out
}

func TestImportDirectoryUploadsToBroker(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	dir := fixtureDir(t)
	r := c.run("", "auth-broker", "import", dir)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout, append(fixtureSkips(dir), prefixed("uploaded ", " → "+b.url, fixtureDescs(dir))...)...)
	if got := b.state(t); !slices.Equal(got, fixtureBrokerState) {
		t.Fatalf("broker\ngot  %q\nwant %q", got, fixtureBrokerState)
	}
	assertNoSecrets(t, r, append(fixtureSecrets, b.token)...)

	// The uploaded fields are the documented mapping, verified on the broker
	// (refresh tokens are redacted on the wire; access tokens are not).
	res, err := b.client.Snapshot(t.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Snapshot.Credentials {
		cr := e.Credential
		switch cr.Email {
		case "codex@x.io":
			if cr.Access != "eyJ.codex-access-secret" || cr.AccountID != "acct-123" || cr.Expires != 4092804000000 {
				t.Errorf("codex entry: access %q accountId %q expires %d", cr.Access, cr.AccountID, cr.Expires)
			}
		case "gem@gmail.com":
			if cr.Access != "ya29.gem-access-secret" || cr.ProjectID != "proj-gem" || cr.Expires != 4081316400123 {
				t.Errorf("legacy gemini entry: access %q projectId %q expires %d", cr.Access, cr.ProjectID, cr.Expires)
			}
		}
		if cr.Refresh != "__remote__" {
			t.Errorf("%s: refresh %q on the wire, want the sentinel", e.Provider, cr.Refresh)
		}
	}

	// Re-importing upserts by identity: nothing is duplicated.
	c.ok("", "auth-broker", "import", dir)
	if got := b.state(t); !slices.Equal(got, fixtureBrokerState) {
		t.Fatalf("broker after a re-import\ngot  %q\nwant %q", got, fixtureBrokerState)
	}
}

func TestImportFlags(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name      string
		args      []string
		wantOut   func(url string) []string
		wantState []string
	}{
		{"provider override makes an unmapped type importable",
			[]string{dir + "/kimi.json", "--provider", "kimi-code"},
			func(url string) []string {
				return []string{"uploaded kimi-code: (no identity) from " + dir + "/kimi.json → " + url}
			},
			[]string{"kimi-code oauth="}},
		{"provider override applies to every file of a directory",
			[]string{dir, "--provider=anthropic"},
			func(url string) []string {
				return []string{
					"skip " + dir + "/bad-expiry.json: cannot parse expired=tomorrow",
					"skip " + dir + "/broken.json: unreadable JSON: unexpected end of JSON input",
					"skip " + dir + "/disabled-claude.json: credential marked disabled (use --include-disabled to import anyway)",
					"skip " + dir + "/missing-tokens.json: missing access_token or refresh_token",
					"skip " + dir + "/vertex.json: missing access_token or refresh_token",
					"uploaded anthropic: ag@gmail.com from " + dir + "/antigravity-ag.json → " + url,
					"uploaded anthropic: dev@x.io from " + dir + "/claude-dev.json → " + url,
					"uploaded anthropic: codex@x.io from " + dir + "/codex-acc.json → " + url,
					"uploaded anthropic: old@gmail.com [expired] from " + dir + "/gemini-cli-plugin.json → " + url,
					"uploaded anthropic: gem@gmail.com from " + dir + "/gemini-legacy.json → " + url,
					"uploaded anthropic: (no identity) from " + dir + "/kimi.json → " + url,
				}
			},
			[]string{"anthropic oauth=", "anthropic oauth=ag@gmail.com", "anthropic oauth=codex@x.io",
				"anthropic oauth=dev@x.io", "anthropic oauth=gem@gmail.com", "anthropic oauth=old@gmail.com"}},
		{"include-disabled imports the disabled file and marks it",
			[]string{dir + "/disabled-claude.json", "--include-disabled"},
			func(url string) []string {
				return []string{"uploaded anthropic: off@x.io [disabled] from " + dir + "/disabled-claude.json → " + url}
			},
			[]string{"anthropic oauth=off@x.io"}},
		{"dry run writes nothing",
			[]string{dir, "--dry-run"},
			func(string) []string {
				return append(append(fixtureSkips(dir), "Dry run — would import 5 credential(s):"), prefixed("  ", "", fixtureDescs(dir))...)
			},
			[]string{}},
		{"a single skipped file leaves nothing to import",
			[]string{dir + "/vertex.json"},
			func(string) []string {
				return []string{
					"skip " + dir + "/vertex.json: cannot determine omp provider from type=vertex (pass --provider to override)",
					"No importable credentials in " + dir + "/vertex.json.",
				}
			},
			[]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBroker(t, "")
			c := newCLI(t)
			c.useBroker(b)
			r := c.run("", append([]string{"auth-broker", "import"}, tt.args...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
			}
			wantLines(t, r.stdout, tt.wantOut(b.url)...)
			if got := b.state(t); !slices.Equal(got, tt.wantState) {
				t.Fatalf("broker\ngot  %q\nwant %q", got, tt.wantState)
			}
			assertNoSecrets(t, r, fixtureSecrets...)
		})
	}
}

// importJSON is the --json summary line of `import`.
type importJSON struct {
	DryRun   bool `json:"dryRun"`
	Imported []struct {
		Provider string  `json:"provider"`
		Email    *string `json:"email"`
		File     string  `json:"file"`
	} `json:"imported"`
	Plan []struct {
		Provider  string  `json:"provider"`
		Email     *string `json:"email"`
		AccountID *string `json:"accountId"`
		ExpiresAt *int64  `json:"expiresAt"`
		Disabled  bool    `json:"disabled"`
		File      string  `json:"file"`
	} `json:"plan"`
	Skipped []struct {
		File   string `json:"file"`
		Reason string `json:"reason"`
	} `json:"skipped"`
}

func TestImportJSONExactShape(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.json"), `{"type":"codex","access_token":"acc-json-secret","refresh_token":"rt-json-secret","account_id":"acct-9","expired":"2099-01-01T00:00:00Z"}`)
	writeFile(t, filepath.Join(src, "b.json"), `{"type":"xai","access_token":"x","refresh_token":"y","expired":"2099-01-01T00:00:00Z"}`)
	plan := `[{"provider":"openai-codex","email":null,"accountId":"acct-9","expiresAt":4070908800000,"disabled":false,"file":"` + src + `/a.json"}]`
	skipped := `[{"file":"` + src + `/b.json","reason":"cannot determine omp provider from type=xai (pass --provider to override)"}]`
	for _, dry := range []bool{true, false} {
		b := startBroker(t, "")
		c := newCLI(t)
		c.useBroker(b)
		args := []string{"auth-broker", "import", src, "--json"}
		imported := `[{"provider":"openai-codex","email":null,"file":"` + src + `/a.json"}]`
		state := []string{"openai-codex oauth=acct-9"}
		if dry {
			args = append(args, "--dry-run")
			imported, state = "[]", []string{}
		}
		r := c.run("", args...)
		want := `{"dryRun":` + map[bool]string{true: "true", false: "false"}[dry] + `,"imported":` + imported +
			`,"plan":` + plan + `,"skipped":` + skipped + "}\n"
		if r.code != 0 || r.stdout != want || r.stderr != "" {
			t.Fatalf("dry=%v: exit %d stderr %q\ngot  %s\nwant %s", dry, r.code, r.stderr, r.stdout, want)
		}
		if got := b.state(t); !slices.Equal(got, state) {
			t.Fatalf("dry=%v: broker %q, want %q", dry, got, state)
		}
		assertNoSecrets(t, r, "acc-json-secret", "rt-json-secret")
	}
}

func TestImportJSONFixtureDirectory(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	dir := fixtureDir(t)
	r := c.run("", "auth-broker", "import", dir, "--json", "--include-disabled")
	if r.code != 0 || r.stderr != "" || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("exit %d stderr %q stdout %q", r.code, r.stderr, r.stdout)
	}
	var out importJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.DryRun || len(out.Plan) != 6 || len(out.Imported) != 6 || len(out.Skipped) != 5 {
		t.Fatalf("dryRun %v, %d planned, %d imported, %d skipped; want false, 6, 6, 5", out.DryRun, len(out.Plan), len(out.Imported), len(out.Skipped))
	}
	var disabled []string
	for _, p := range out.Plan {
		if p.Disabled {
			disabled = append(disabled, filepath.Base(p.File))
		}
		if p.ExpiresAt == nil || *p.ExpiresAt <= 0 {
			t.Errorf("%s: expiresAt %v", p.File, p.ExpiresAt)
		}
	}
	if !slices.Equal(disabled, []string{"disabled-claude.json"}) {
		t.Errorf("disabled plan entries %q", disabled)
	}
	assertNoSecrets(t, r, fixtureSecrets...)
}

func TestImportUploadFailureExitsOne(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = b.url, "wrong-bearer-secret"
	dir := fixtureDir(t)
	file := dir + "/claude-dev.json"
	const msg = "Auth broker request failed: 401 Unauthorized"

	r := c.run("", "auth-broker", "import", file)
	if r.code != 1 || r.stdout != "failed anthropic: dev@x.io from "+file+": "+msg+"\n" || r.stderr != "" {
		t.Fatalf("text: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = c.run("", "auth-broker", "import", file, "--json")
	wantLines(t, r.stdout,
		`{"dryRun":false,"imported":[],"plan":[{"provider":"anthropic","email":"dev@x.io","accountId":null,"expiresAt":4091968800000,"disabled":false,"file":"`+file+`"}],"skipped":[]}`,
		`{"error":"`+msg+`","file":"`+file+`"}`)
	if r.code != 1 || r.stderr != "" {
		t.Fatalf("json: exit %d stderr %q", r.code, r.stderr)
	}
	assertNoSecrets(t, r, append(fixtureSecrets, "wrong-bearer-secret", b.token)...)
	if got := b.state(t); len(got) != 0 {
		t.Fatalf("broker holds %q after failed uploads", got)
	}
}

func TestImportWithoutBrokerWritesLocalVault(t *testing.T) {
	c := newCLI(t)
	dir := fixtureDir(t)
	r := c.run("", "auth-broker", "import", dir)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	wantLines(t, r.stdout, append(fixtureSkips(dir), prefixed("imported ", "", fixtureDescs(dir))...)...)
	want := prefixed("", " []", fixtureBrokerState)
	if got := c.localState(); !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
	assertNoSecrets(t, r, fixtureSecrets...)
}

func TestImportExpandsTildeWithTheUsersHome(t *testing.T) {
	c := newCLI(t)
	src := filepath.Join(c.home, "cpa")
	writeFile(t, filepath.Join(src, "claude-me.json"), `{"type":"claude","access_token":"a-tilde","refresh_token":"r-tilde","email":"me@x.io","expired":"2099-01-01T00:00:00Z"}`)
	out := c.ok("", "auth-broker", "import", "~/cpa", "--dry-run")
	wantLines(t, out, "Dry run — would import 1 credential(s):", "  anthropic: me@x.io from "+src+"/claude-me.json")
}

func TestImportErrors(t *testing.T) {
	c := newCLI(t)
	missing := filepath.Join(c.home, "nope")
	empty := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"no path", nil, 1, "", "error: Usage: omp auth-broker import <file|dir> [--provider=<id>] [--include-disabled] [--dry-run]\n"},
		{"two paths", []string{empty, empty}, 1, "",
			usageText("accepts at most 1 arg(s), received 2", "omp auth-broker import <file|dir> [flags]", "omp auth-broker import")},
		{"missing path", []string{missing}, 1, "", "error: stat " + missing + ": no such file or directory\n"},
		{"neither file nor directory", []string{os.DevNull}, 1, "", "error: Import source is neither file nor directory: " + os.DevNull + "\n"},
		{"empty directory", []string{empty}, 0, "No importable credentials in " + empty + ".\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.run("", append([]string{"auth-broker", "import"}, tt.args...)...)
			if r.code != tt.wantCode || r.stdout != tt.wantOut || r.stderr != tt.wantErr {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
