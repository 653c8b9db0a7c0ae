package gateway_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gateway"
)

// `omp auth-gateway serve` reads the account policies of config.yml; a
// malformed one stops it with the file and the entry named.
func TestFromEnvReadsAccountPolicies(t *testing.T) {
	env := config.NewEnv(map[string]string{"HOME": t.TempDir()})
	dirs, err := config.ResolveDirs(*env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.AgentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(doc string) {
		if err := os.WriteFile(dirs.ConfigYML(), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	write("auth:\n  accountPolicies:\n    - provider: openai-codex\n      account: {accountId: acct-1}\n      priority: 4\nretry:\n  usageReservePct: 20\n")
	cfg, err := gateway.FromEnv(context.Background(), env, dirs, log, log)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Policies; p == nil || p.ReservePct != 20 || len(p.List) != 1 || p.List[0].Account.AccountID != "acct-1" || *p.List[0].Priority != 4 {
		t.Fatalf("policies %+v", cfg.Policies)
	}
	write("auth:\n  accountPolicies:\n    - provider: openai-codex\n      account: {accountId: acct-1}\n      reservePct: -5\n")
	_, err = gateway.FromEnv(context.Background(), env, dirs, log, log)
	if want := dirs.ConfigYML() + ": auth.accountPolicies[0].reservePct must be between 0 and 100"; err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
}
