//go:build interop

package interopdiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

// runRef runs the reference CLI with HOME=home, the clean environment and
// env, and returns its stdout; stderr is logged.
func runRef(t *testing.T, ref reference, home string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ref.bun, append([]string{ref.cli}, args...)...)
	cmd.Dir = home
	cmd.Env = append(append(benchproc.CleanEnv(), "HOME="+home), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("reference omp %s → %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, benchproc.Tail(out.Bytes(), 3000), benchproc.Tail(errb.Bytes(), 2000))
	if strings.Contains(errb.String(), "schema validation") || strings.Contains(out.String(), "schema validation") {
		t.Errorf("reference omp %s: a schema validation failure against our broker", strings.Join(args, " "))
	}
	return out.String(), err
}

type snapshotEntry struct {
	ID         int64          `json:"id"`
	Provider   string         `json:"provider"`
	Credential map[string]any `json:"credential"`
}

func ourSnapshot(t *testing.T, b *benchproc.Broker) []snapshotEntry {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.URL+"/v1/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	req.Header.Set(CapabilitiesHeader, capabilitiesValue)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap struct {
		Credentials []snapshotEntry `json:"credentials"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	return snap.Credentials
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// agentDBScript writes an 18.1.21 agent.db with the reference's own store:
// org-scoped OAuth rows (two organisations under one email), a Codex
// workspace row, an API key from a login and an MCP OAuth row.
const agentDBScript = `
const { SqliteAuthCredentialStore } = await import(process.env.PI_AI_INDEX);
const { getAgentDbPath } = await import(process.env.PI_UTILS_INDEX);
const far = 4102444800000;
const s = await SqliteAuthCredentialStore.open(getAgentDbPath());
s.upsertAuthCredentialForProvider("anthropic", { type: "oauth", access: "at-mig-1", refresh: "rt-mig-1", expires: far,
  email: "mig@example.com", accountId: "acc-mig", orgId: "org-mig-1", orgName: "Team", authorizedAt: 1765500000000 });
s.upsertAuthCredentialForProvider("anthropic", { type: "oauth", access: "at-mig-2", refresh: "rt-mig-2", expires: far,
  email: "mig@example.com", accountId: "acc-mig", orgId: "org-mig-2", orgName: "Personal", authorizedAt: 1765500000000 });
s.upsertAuthCredentialForProvider("openai-codex", { type: "oauth", access: "at-mig-3", refresh: "rt-mig-3", expires: far,
  email: "cmig@example.com", accountId: "ws-mig", orgId: "ws-mig", orgName: "plus" });
s.upsertAuthCredentialForProvider("zai", { type: "api_key", key: "zk-mig", source: "login" });
s.upsertAuthCredentialForProvider("mcp_oauth:profile:default:http://127.0.0.1:9/mcp", { type: "oauth", access: "at-mig-5",
  refresh: "rt-mig-5", expires: far, tokenUrl: "http://127.0.0.1:9/token", clientId: "mcp-client", resource: "http://127.0.0.1:9/mcp" });
console.log(JSON.stringify(s.listAuthCredentials().map(r => r.provider)));
s.close();
`

// TestReferenceCommandsAgainstOurs drives the reference CLI's own broker
// commands at our broker: import of CLIProxyAPI files, migrate --from-local
// of an 18.1.21 agent.db (twice: the second run must find everything but
// the identity-less MCP row already on the broker) and auth-gateway check.
func TestReferenceCommandsAgainstOurs(t *testing.T) {
	ref := needReference(t)
	fake, err := StartTokenServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	ours, err := benchproc.StartBroker("interopdiff-cli-ours", []string{ourBinary(t), "auth-broker", "serve"}, tokenEnv(fake)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Keep = *keep || t.Failed(); ours.Stop() })
	brokerEnv := append([]string{"OMP_AUTH_BROKER_URL=" + ours.URL, "OMP_AUTH_BROKER_TOKEN=" + ours.Token}, proxyEnv(fake)...)

	t.Run("import", func(t *testing.T) {
		home := t.TempDir()
		dir := filepath.Join(home, "cliproxy")
		writeFile(t, filepath.Join(dir, "claude-imp@example.com.json"),
			`{"type":"claude","access_token":"at-imp-1","refresh_token":"rt-imp-1","email":"imp@example.com","expired":"2099-01-01T00:00:00Z"}`)
		writeFile(t, filepath.Join(dir, "codex-imp@example.com.json"),
			`{"type":"codex","access_token":"at-imp-2","refresh_token":"rt-imp-2","email":"cimp@example.com","account_id":"acct-imp","expired":"2099-01-01T00:00:00Z"}`)
		writeFile(t, filepath.Join(dir, "gemini-imp.json"),
			`{"type":"gemini","access_token":"at-imp-3","refresh_token":"rt-imp-3","email":"gimp@example.com","expired":"2099-01-01T00:00:00Z"}`)
		writeFile(t, filepath.Join(dir, "antigravity-imp.json"),
			`{"type":"antigravity","access_token":"at-imp-4","refresh_token":"rt-imp-4","email":"agimp@example.com","expired":"2099-01-01T00:00:00Z"}`)
		before := len(ourSnapshot(t, ours))
		if _, err := runRef(t, ref, home, brokerEnv, "auth-broker", "import", dir); err != nil {
			t.Fatalf("reference import against our broker: %v", err)
		}
		got := ourSnapshot(t, ours)
		var imported []string
		for _, e := range got {
			if a, _ := e.Credential["access"].(string); strings.HasPrefix(a, "at-imp-") {
				imported = append(imported, e.Provider)
			}
		}
		slices.Sort(imported)
		want := []string{"anthropic", "google-antigravity", "google-gemini-cli", "openai-codex"}
		if !slices.Equal(imported, want) {
			t.Errorf("after import our broker holds %v (had %d rows before), want %v", imported, before, want)
		}
	})

	t.Run("migrate --from-local", func(t *testing.T) {
		home := t.TempDir()
		script := filepath.Join(home, "make-agent-db.mjs")
		writeFile(t, script, agentDBScript)
		cmd := exec.Command(ref.bun, script)
		cmd.Dir = home
		cmd.Env = append(append(benchproc.CleanEnv(), "HOME="+home),
			"PI_AI_INDEX="+filepath.Join(ref.dir, "node_modules/@oh-my-pi/pi-ai/src/index.ts"),
			"PI_UTILS_INDEX="+filepath.Join(ref.dir, "node_modules/@oh-my-pi/pi-utils/src/index.ts"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("writing an 18.1.21 agent.db with the reference store: %v\n%s", err, out)
		}
		t.Logf("reference agent.db rows: %s", bytes.TrimSpace(out))

		type plan struct {
			Plan []struct {
				Provider, Identity string
			} `json:"plan"`
			Skipped []struct {
				Provider, Identity, Reason string
			} `json:"skipped"`
		}
		migrate := func() plan {
			stdout, err := runRef(t, ref, home, brokerEnv, "auth-broker", "migrate", "--from-local", "--include-oauth", "--json")
			if err != nil {
				t.Errorf("reference migrate against our broker: %v", err)
			}
			var p plan
			for i, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if i == 0 {
					if err := json.Unmarshal([]byte(line), &p); err != nil {
						t.Fatalf("migrate --json output: %v: %q", err, line)
					}
					continue
				}
				if strings.Contains(line, `"error"`) {
					t.Errorf("migrate upload failed on our broker: %s", line)
				}
			}
			return p
		}
		first := migrate()
		if len(first.Plan) != 5 {
			t.Errorf("first migrate planned %d uploads, want 5: %+v", len(first.Plan), first)
		}
		got := ourSnapshot(t, ours)
		var orgs []string
		for _, e := range got {
			a, _ := e.Credential["access"].(string)
			if strings.HasPrefix(a, "at-mig-") || e.Credential["key"] == "zk-mig" {
				orgs = append(orgs, fmt.Sprintf("%s:%v", e.Provider, e.Credential["orgId"]))
			}
		}
		slices.Sort(orgs)
		want := []string{"anthropic:org-mig-1", "anthropic:org-mig-2", "mcp_oauth:profile:default:http://127.0.0.1:9/mcp:<nil>", "openai-codex:ws-mig", "zai:<nil>"}
		if !slices.Equal(orgs, want) {
			t.Errorf("after migrate our broker holds %v, want %v", orgs, want)
		}
		// Re-running must not re-upload what is there (it would overwrite
		// the broker's newer refresh tokens): only the identity-less MCP
		// row is planned again, as against a reference broker.
		second := migrate()
		var again []string
		for _, p := range second.Plan {
			again = append(again, p.Provider)
		}
		if !slices.Equal(again, []string{"mcp_oauth:profile:default:http://127.0.0.1:9/mcp"}) {
			t.Errorf("second migrate planned %v, want only the MCP row", again)
		}
	})

	t.Run("auth-gateway check --json", func(t *testing.T) {
		home := t.TempDir()
		stdout, err := runRef(t, ref, home, brokerEnv, "auth-gateway", "check", "--json")
		if err != nil {
			t.Fatalf("reference auth-gateway check against our broker: %v", err)
		}
		var res struct {
			Broker      string           `json:"broker"`
			Credentials []map[string]any `json:"credentials"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("check --json output: %v", err)
		}
		if res.Broker != ours.URL {
			t.Errorf("check reports broker %q, want %q", res.Broker, ours.URL)
		}
		if n := len(ourSnapshot(t, ours)); len(res.Credentials) != n {
			t.Errorf("check lists %d credentials, our snapshot has %d", len(res.Credentials), n)
		}
	})
}
