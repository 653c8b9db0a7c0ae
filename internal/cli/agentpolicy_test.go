package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ompgo/omp/internal/config"
)

// An invalid account policy in config.yml stops the agent before it asks
// the broker anything, with an error naming the file and the entry.
func TestConnectBrokerRefusesInvalidAccountPolicy(t *testing.T) {
	var asked atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(fake.Close)
	env := config.NewEnv(map[string]string{"HOME": t.TempDir(), "OMP_AUTH_BROKER_URL": fake.URL, "OMP_AUTH_BROKER_TOKEN": "tok"})
	dirs, err := config.ResolveDirs(*env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.AgentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := "auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {email: a@x}\n      reservePct: 150\n"
	if err := os.WriteFile(dirs.ConfigYML(), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	settings, err := config.LoadSettings(dirs.AgentDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = connectBroker(ctx, env, dirs, settings, nil, io.Discard)
	want := filepath.Join(dirs.AgentDir, "config.yml") + ": auth.accountPolicies[0].reservePct must be between 0 and 100"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the broker was asked %d times", n)
	}
}
