package ompcli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/brokerapi"
)

// TestClientServesThroughHost runs the real client `omp auth-broker serve`:
// it execs omp-host (built beside it), so the very process started as omp
// — same PID — becomes omp-host and serves the broker API; the client
// `omp auth-broker status` reaches it, and SIGTERM stops it cleanly.
func TestClientServesThroughHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binaries")
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
	exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(exe) != "omp-host" {
		t.Errorf("the serving process runs %s, want omp-host (exec'd by omp)", exe)
	}

	token, err := os.ReadFile(c.tokenPath())
	if err != nil {
		t.Fatal(err)
	}
	st := exec.Command(omp, "auth-broker", "status", "--json")
	st.Env = append(c.environ(), "OMP_AUTH_BROKER_URL="+url, "OMP_AUTH_BROKER_TOKEN="+strings.TrimSpace(string(token)))
	out, err := st.Output()
	if err != nil || !bytes.Contains(out, []byte(`"ok":true`)) {
		t.Fatalf("status through the client: %v %s", err, out)
	}
	if _, err := brokerapi.NewClient(url, strings.TrimSpace(string(token)), nil).Healthz(context.Background()); err != nil {
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

// TestClientFindsHost: the look-up order ($OMP_HOST_BIN, beside the
// client, PATH) and the error when omp-host is nowhere (exit 1, nothing
// on stdout, a message naming what to install). A client-only command
// never needs the host.
func TestClientFindsHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binaries")
	}
	built := ompBinary(t)
	host := filepath.Join(filepath.Dir(built), "omp-host")
	alone := filepath.Join(t.TempDir(), "omp")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	emptyPath := t.TempDir()
	runOmp := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(alone, args...)
		cmd.Env = append([]string{"HOME=" + c.home, "PATH=" + emptyPath}, env...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = c.cwd, &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}

	// Nowhere: a clear error, exit 1.
	code, out, errOut := runOmp(nil, "auth-broker", "token", "list")
	want := "error: this command runs in omp-host, which is not installed: install the omp-host binary next to omp (" +
		filepath.Join(filepath.Dir(alone), "omp-host") + ") or in PATH, or set OMP_HOST_BIN to its path\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("without omp-host: exit %d stdout %q stderr %q, want 1 and %q", code, out, errOut, want)
	}
	// A client command runs without it, and so does local `usage` while
	// there is no vault (environment API keys only).
	if code, out, errOut := runOmp(nil, "auth-broker", "status"); code != 0 || !strings.Contains(out, "No auth-broker configured") {
		t.Errorf("status without omp-host: exit %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runOmp(nil, "usage", "--json"); code != 0 || !strings.Contains(out, `"reports": []`) {
		t.Errorf("usage without a vault or omp-host: exit %d %q %q", code, out, errOut)
	}
	// $OMP_HOST_BIN, then PATH: the host runs the command (an empty vault
	// has no tokens).
	if code, out, errOut := runOmp([]string{"OMP_HOST_BIN=" + host}, "auth-broker", "token", "list", "--json"); code != 0 || out != "[]\n" {
		t.Errorf("with OMP_HOST_BIN: exit %d stdout %q stderr %q", code, out, errOut)
	}
	// Now a vault exists: local `usage` opens it, so it needs omp-host, and
	// says so before printing anything.
	if code, out, errOut := runOmp(nil, "usage", "--json"); code != 1 || out != "" || errOut != want {
		t.Errorf("usage with a vault, without omp-host: exit %d stdout %q stderr %q", code, out, errOut)
	}
	pathDir := t.TempDir()
	if err := os.Symlink(host, filepath.Join(pathDir, "omp-host")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runOmp([]string{"PATH=" + pathDir}, "auth-broker", "token", "list", "--json"); code != 0 || out != "[]\n" {
		t.Errorf("with omp-host in PATH: exit %d stdout %q stderr %q", code, out, errOut)
	}
	// A wrong OMP_HOST_BIN is named, not silently skipped.
	code, _, errOut = runOmp([]string{"OMP_HOST_BIN=" + filepath.Join(emptyPath, "nope")}, "auth-broker", "token", "list")
	if code != 1 || !strings.Contains(errOut, "OMP_HOST_BIN="+filepath.Join(emptyPath, "nope")+" is not an executable file") {
		t.Errorf("bad OMP_HOST_BIN: exit %d stderr %q", code, errOut)
	}
	// omp-host that is really the client is refused, not exec'd forever.
	code, _, errOut = runOmp([]string{"OMP_HOST_BIN=" + alone}, "auth-broker", "token", "list")
	if code != 1 || errOut != "error: "+alone+" is this omp client, not omp-host; install the omp-host binary (make build writes bin/omp-host)\n" {
		t.Errorf("OMP_HOST_BIN=omp: exit %d stderr %q", code, errOut)
	}
	// The host's failure is the client's: exit 1 and its message.
	if code, _, errOut := runOmp([]string{"OMP_HOST_BIN=" + host}, "auth-broker", "token", "revoke", "nope"); code != 1 || errOut != "error: revoke token: no token named \"nope\"\n" {
		t.Errorf("failing host command: exit %d stderr %q", code, errOut)
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
