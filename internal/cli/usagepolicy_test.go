package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/config"
)

// `omp usage` shows each account's policy line from config.yml; an invalid
// policy is an error naming the file and the entry.
func TestUsageShowsAccountPolicies(t *testing.T) {
	fake, _ := fakeAnthropicUsage(t, "acc-refresh-alice")
	c := newCLI(t)
	c.seed(oauthCred("anthropic", "alice@example.com", "refresh-alice"))
	c.env["OMP_PROVIDER_ANTHROPIC_USAGE_URL"] = fake.URL + "/api/oauth"
	dirs, err := config.ResolveDirs(*config.NewEnv(map[string]string{"HOME": c.home}))
	if err != nil {
		t.Fatal(err)
	}
	write := func(doc string) {
		if err := os.WriteFile(filepath.Join(dirs.AgentDir, "config.yml"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {email: alice@example.com}\n      priority: 3\n      reservePct: 20\n")
	out := c.ok("", "usage")
	if want := "\n      policy: priority 3 · reserve 20% (override) · inside reserve · 19.0% left\n"; !strings.Contains(out, want) {
		t.Errorf("usage text lacks %q:\n%s", want, out)
	}
	write("retry:\n  usageReservePct: 15\n")
	if out := c.ok("", "usage"); strings.Contains(out, "policy:") {
		t.Errorf("a global reserve alone printed policy lines:\n%s", out)
	}
	write("auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {email: alice@example.com}\n      priority: first\n")
	r := c.run("", "usage")
	if want := filepath.Join(dirs.AgentDir, "config.yml") + ": auth.accountPolicies[0].priority must be a finite number"; r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("invalid policy: exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
}
