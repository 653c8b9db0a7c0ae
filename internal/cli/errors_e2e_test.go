package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/config"
)

// printAgainst runs `omp -p hi` with an anthropic model and extra
// environment, returning its exit code, stderr and duration.
func (e *e2eEnv) printAgainst(t *testing.T, extra ...string) (code int, stderr string, took time.Duration) {
	t.Helper()
	cmd := exec.Command(binary(t), "-p", "--no-session", "--model", "anthropic/claude-3-haiku-20240307", "hi")
	cmd.Dir = e.project
	cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-api03-e2e"}, extra...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, errb.String(), took
}

// TestAgentE2ETransportErrorNamesURLAndReason: a provider that cannot be
// reached fails with its URL (no query) and the reason; an HTTP error
// names the provider, the status and the upstream's message.
func TestAgentE2ETransportErrorNamesURLAndReason(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	// A refused connection is retried; one quick retry keeps the test short
	// and shows config.yml's retry settings reach the agent.
	cfg := filepath.Join(e.home, ".omp", "agent", "config.yml")
	if err := os.WriteFile(cfg, []byte("retry:\n  maxRetries: 1\n  baseDelayMs: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := closedAddr(t)
	e.anthropicAt(t, "http://"+addr)
	code, stderr, took := e.printAgainst(t)
	if took > 20*time.Second {
		t.Errorf("took %v: the retry settings of config.yml were not applied", took)
	}
	if want := "request to http://" + addr + "/v1/messages failed: connection refused"; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d stderr %q, want it to contain %q", code, stderr, want)
	}

	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(fakeError{400, `{"type":"error","error":{"type":"invalid_request_error","message":"claude-3-haiku is not allowed here"}}`})
	code, stderr, _ = e.printAgainst(t)
	if want := "anthropic HTTP 400: claude-3-haiku is not allowed here"; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d stderr %q, want it to contain %q", code, stderr, want)
	}
}

// TestAgentE2EBrokerRejectsTokenAtOnce: a 401 from the broker is not
// transient: the agent fails without retrying, naming the token's source.
func TestAgentE2EBrokerRejectsTokenAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	b := startBroker(t, "")
	code, stderr, took := e.printAgainst(t, "OMP_AUTH_BROKER_URL="+b.url, "OMP_AUTH_BROKER_TOKEN=wrong-token-0000")
	want := "auth-broker at " + b.url + " rejected the token from env OMP_AUTH_BROKER_TOKEN (401): check OMP_AUTH_BROKER_TOKEN"
	if code != 1 || !strings.Contains(stderr, want) || took > 5*time.Second {
		t.Fatalf("exit %d after %v, stderr %q, want it to contain %q", code, took, stderr, want)
	}
	if strings.Contains(stderr, "wrong-token-0000") || strings.Contains(stderr, b.token) {
		t.Fatalf("token in stderr: %q", stderr)
	}
}

// TestAgentE2EBrokerDownFailsFast: with the broker's port closed (and no
// cache to boot from) the agent fails within seconds, saying how to start
// the broker, instead of waiting for a snapshot.
func TestAgentE2EBrokerDownFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	url := "http://" + closedAddr(t)
	code, stderr, took := e.printAgainst(t, "OMP_AUTH_BROKER_URL="+url, "OMP_AUTH_BROKER_TOKEN=tok-0000")
	want := "auth broker " + url + " is unreachable: connection refused; start it (omp auth-broker serve) or check OMP_AUTH_BROKER_URL"
	if code != 1 || !strings.Contains(stderr, want) || took > 3*time.Second {
		t.Fatalf("exit %d after %v, stderr %q, want it to contain %q", code, took, stderr, want)
	}
}

// cancelOnWrite cancels a context on its first write and keeps the text.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	defer w.cancel()
	return w.Buffer.Write(p)
}

// TestConnectBrokerSaysItRetries: a broker failure that may pass (a 503)
// is retried, with one line on stderr naming the broker, the error and
// how long the wait lasts.
func TestConnectBrokerSaysItRetries(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"vault is being restored"}`))
	}))
	t.Cleanup(fake.Close)
	env := config.NewEnv(map[string]string{"HOME": t.TempDir(), "OMP_AUTH_BROKER_URL": fake.URL, "OMP_AUTH_BROKER_TOKEN": "tok"})
	dirs, err := config.ResolveDirs(*env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	w := &cancelOnWrite{cancel: cancel}
	if _, err := connectBroker(ctx, env, dirs, nil, nil, w); err == nil {
		t.Fatal("connected to a failing broker")
	}
	want := "auth broker " + fake.URL + ": Auth broker request failed: 503 Service Unavailable: vault is being restored; retrying for up to 15s\n"
	if w.String() != want {
		t.Fatalf("progress %q\nwant     %q", w.String(), want)
	}
}
