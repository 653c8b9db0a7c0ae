package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// TestBinaryServesBroker runs the real binary's `omp auth-broker serve`:
// it serves the broker API, the same binary's `omp auth-broker status`
// reaches it, and SIGTERM stops it cleanly.
func TestBinaryServesBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binary")
	}
	omp := ompBinary(t)
	c := newCLI(t)
	addr := freeAddr(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(omp, "auth-broker", "serve", "--bind", addr)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = c.environ(), c.cwd, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/v1/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker never answered: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	token, err := os.ReadFile(c.tokenPath())
	if err != nil {
		t.Fatal(err)
	}
	st := exec.Command(omp, "auth-broker", "status", "--json")
	st.Env = append(c.environ(), "OMP_AUTH_BROKER_URL="+url, "OMP_AUTH_BROKER_TOKEN="+strings.TrimSpace(string(token)))
	out, err := st.Output()
	if err != nil || !bytes.Contains(out, []byte(`"ok":true`)) {
		t.Fatalf("status: %v %s", err, out)
	}
	if _, err := brokerclient.New(url, strings.TrimSpace(string(token)), nil).Healthz(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v\nstderr %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not stop on SIGTERM")
	}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
