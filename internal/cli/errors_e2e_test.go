package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
	addr := closedAddr(t)
	e.anthropicAt(t, "http://"+addr)
	code, stderr, _ := e.printAgainst(t)
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
