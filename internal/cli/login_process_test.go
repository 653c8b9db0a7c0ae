package cli

// Login tests that run processes: --via through a fake ssh and the real
// omp binary, and SIGINT to a real login.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/oauth/oauthtest"
)

func TestLoginViaDryRun(t *testing.T) {
	c := newCLI(t)
	out := c.ok("", "auth-broker", "login", "google-gemini-cli", "--via=me@broker", "--dry-run")
	if want := "ssh -L 8085:127.0.0.1:8085 -o ExitOnForwardFailure=yes me@broker 'omp auth-broker login google-gemini-cli'\n"; out != want {
		t.Fatalf("dry run = %q, want %q", out, want)
	}
	c.env["PATH"] = t.TempDir()
	r := c.run("", "auth-broker", "login", "anthropic", "--via=me@broker")
	if r.code != 1 || r.stderr != "error: ssh binary not found in PATH\n" {
		t.Fatalf("no ssh: exit %d stderr %q", r.code, r.stderr)
	}
}

// TestLoginViaSSH runs --via through a fake ssh that records its argv and
// runs the remote command here with a real omp binary, so the whole flow
// (forwarded port spec, remote login, fake browser via BROWSER, vault
// write on the "broker host") is exercised.
func TestLoginViaSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binary")
	}
	bin := t.TempDir()
	if err := os.Symlink(ompBinary(t), filepath.Join(bin, "omp")); err != nil {
		t.Fatal(err)
	}
	argv := filepath.Join(t.TempDir(), "argv")
	writeExec(t, filepath.Join(bin, "ssh"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > \""+argv+"\"\nfor last; do :; done\nexec sh -c \"$last\"\n")
	writeExec(t, filepath.Join(bin, "fake-browser"), "#!/bin/sh\n(curl -s -L -o /dev/null \"$1\" || wget -q -O /dev/null \"$1\") &\n")

	fake := oauthtest.New(t)
	fake.Set(func(f *oauthtest.Server) {
		f.Reply = map[string]any{"access_token": "at-via", "refresh_token": "rt-via-secret", "expires_in": 3600,
			"account": map[string]any{"uuid": "u-via", "email_address": "via@example.com"}}
	})
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	c.env["BROWSER"] = filepath.Join(bin, "fake-browser")
	var stdout, stderr bytes.Buffer
	env := append(c.environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, environ: env, cwd: c.cwd}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := a.execute(ctx, []string{"auth-broker", "login", "anthropic", "--via=me@broker"}); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	got, _ := os.ReadFile(argv)
	want := "-L\n54545:127.0.0.1:54545\n-o\nExitOnForwardFailure=yes\nme@broker\nomp auth-broker login anthropic\n"
	if string(got) != want {
		t.Fatalf("ssh argv:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stdout.String(), "Credentials saved to "+c.vaultDB()) {
		t.Fatalf("remote login output:\n%s", stdout.String())
	}
	if recs := c.localRecords(); len(recs) != 1 || recs[0].IdentityKey != "email:via@example.com" {
		t.Fatalf("vault = %+v", recs)
	}
	assertSealed(t, c.vaultDB(), "rt-via-secret")

	// The remote side fails → the reference's text with ssh's exit code.
	stdout.Reset()
	stderr.Reset()
	writeExec(t, filepath.Join(bin, "ssh"), "#!/bin/sh\nexit 255\n")
	if code := a.execute(ctx, []string{"auth-broker", "login", "anthropic", "--via=me@broker"}); code != 1 || stderr.String() != "error: ssh exited with code 255\n" {
		t.Fatalf("exit %d stderr %q", code, stderr.String())
	}
}

var (
	ompBuild     sync.Once
	ompBuildPath string
	ompBuildErr  error
)

// TestMain removes the binary ompBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if ompBuildPath != "" {
		os.RemoveAll(filepath.Dir(ompBuildPath))
	}
	os.Exit(code)
}

// ompBinary builds the omp binary once per test run.
func ompBinary(t testing.TB) string {
	t.Helper()
	ompBuild.Do(func() {
		dir, err := os.MkdirTemp("", "omp-login-test-")
		if err != nil {
			ompBuildErr = err
			return
		}
		ompBuildPath = filepath.Join(dir, "omp")
		if out, err := exec.Command("go", "build", "-o", ompBuildPath, "../../cmd/omp").CombinedOutput(); err != nil {
			ompBuildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if ompBuildErr != nil {
		t.Fatal(ompBuildErr)
	}
	return ompBuildPath
}

// TestLoginInterruptWritesNothing sends SIGINT to a real `omp auth-broker
// login` waiting for its callback: it exits non-zero with "Login
// cancelled", no token request was made and the vault has no row.
func TestLoginInterruptWritesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the omp binary")
	}
	fake := oauthtest.New(t)
	c := newCLI(t)
	c.useFake(fake, "anthropic")
	cmd := exec.Command(ompBinary(t), "auth-broker", "login", "anthropic")
	cmd.Env = c.environ()
	cmd.Dir = c.cwd
	stdin, err := cmd.StdinPipe() // open: the login also waits for a paste
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the authorization URL, then interrupt.
	buf := make([]byte, 64<<10)
	var out []byte
	deadline := time.Now().Add(testTimeout)
	for !bytes.Contains(out, []byte(pastePrompt)) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no prompt; stdout so far:\n%s", out)
		}
		n, err := stdout.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || stderr.String() != "error: Login cancelled\n" {
		t.Fatalf("exit %v stderr %q", err, stderr.String())
	}
	if recs := c.localRecords(); len(recs) != 0 || len(fake.Exchanges()) != 0 {
		t.Fatalf("vault = %+v, exchanges %d", recs, len(fake.Exchanges()))
	}
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserCommand: BROWSER is a ':'-separated list of commands tried in
// order, "%s" stands for the URL (else it is appended); without BROWSER
// and without a display there is no browser at all.
func TestBrowserCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	writeExec(t, filepath.Join(dir, "rec"), "#!/bin/sh\nprintf '%s|' \"$@\" > \""+out+"\"\n")
	read := func() string {
		t.Helper()
		deadline := time.Now().Add(testTimeout)
		for {
			if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
				os.Remove(out)
				return string(b)
			}
			if time.Now().After(deadline) {
				t.Fatal("browser command did not run")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, tt := range []struct{ browser, want string }{
		{"rec", "http://x/a?b=c|"},
		{"missing-browser:rec --new-window", "--new-window|http://x/a?b=c|"},
		{"rec --url=%s --flag", "--url=http://x/a?b=c|--flag|"},
	} {
		a := &app{environ: []string{"HOME=" + dir, "PATH=" + dir, "BROWSER=" + tt.browser}, cwd: dir}
		open := a.browser()
		if open == nil {
			t.Fatalf("BROWSER=%q: no browser", tt.browser)
		}
		if err := open("http://x/a?b=c"); err != nil {
			t.Fatalf("BROWSER=%q: %v", tt.browser, err)
		}
		if got := read(); got != tt.want {
			t.Errorf("BROWSER=%q ran with %q, want %q", tt.browser, got, tt.want)
		}
	}
	a := &app{environ: []string{"HOME=" + dir, "PATH=" + dir, "BROWSER=nothing-here"}, cwd: dir}
	if err := a.browser()("http://x"); err == nil {
		t.Error("a BROWSER that does not exist reported success")
	}
	if runtime.GOOS != "darwin" {
		if a := (&app{environ: []string{"HOME=" + dir, "PATH=" + dir}, cwd: dir}); a.browser() != nil {
			t.Error("a browser without BROWSER and without a display")
		}
	}
}
