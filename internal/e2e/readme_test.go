package e2e_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's quick-start ports: the test runs the blocks on free ports
// instead, so that a `make run` on the same host does not collide.
const (
	readmeBrokerBind  = "127.0.0.1:8765"
	readmeGatewayBind = "127.0.0.1:4000"
)

// Both answers the quick start shows: the gateway's JSON and the agent's
// text.
const (
	wantJSONAnswer = `demo: you said \"hello\"`
	wantTextAnswer = `demo: you said "hello"`
)

// TestReadmeQuickStart runs the README's quick-start blocks verbatim with
// bash against fresh homes (only the ports changed): the commands after
// `make run` against scripts/run.sh, and the installed-binary block with
// omp on PATH. Every command must succeed and both completions must carry
// the demo's answer.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/omp")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makeRun := quickstartBlock(t, string(readme), "make-run")
	binary := quickstartBlock(t, string(readme), "binary")

	// One build of the binary, as `make build` and `go install` make it.
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "omp"), "./cmd/omp")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/omp: %v\n%s", err, out)
	}

	t.Run("make-run", func(t *testing.T) {
		brokerBind, gatewayBind := freeAddr(t), freeAddr(t)
		// `make run` is scripts/run.sh "$(CURDIR)/.run" bin, in the directory
		// the README's commands then run in.
		dir := filepath.Join(work, "make-run")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
			t.Fatal(err)
		}
		run := exec.Command(filepath.Join(root, "scripts", "run.sh"), filepath.Join(dir, ".run"), "bin")
		run.Dir = dir
		run.Env = cleanEnv(filepath.Join(work, "nohome"), "", "OMP_BROKER_BIND="+brokerBind, "OMP_GATEWAY_BIND="+gatewayBind)
		printed := startGroup(t, run, filepath.Join(work, "make-run.log"))
		waitHealthy(t, "http://"+gatewayBind+"/healthz", printed)

		// What it printed is a working first request too.
		if !strings.Contains(readFile(t, printed), `"model":"demo-echo"`) {
			t.Fatalf("make run printed no first request:\n%s", readFile(t, printed))
		}
		out := runBlock(t, dir, cleanEnv(filepath.Join(work, "nohome"), ""), ports(makeRun, brokerBind, gatewayBind), filepath.Join(work, "make-run-block.log"))
		for _, want := range []string{wantJSONAnswer, wantTextAnswer} {
			if !strings.Contains(out, want) {
				t.Errorf("the make-run block's output lacks %s:\n%s", want, out)
			}
		}
		firstRequest := printedLine(t, readFile(t, printed), "curl -s http://")
		if out := runBlock(t, dir, cleanEnv(filepath.Join(work, "nohome"), ""), firstRequest, filepath.Join(work, "printed.log")); !strings.Contains(out, wantJSONAnswer) {
			t.Errorf("make run's printed request answered:\n%s", out)
		}
		agent := printedLine(t, readFile(t, printed), "OMP_AUTH_BROKER_URL=")
		if out := runBlock(t, dir, cleanEnv(filepath.Join(work, "nohome"), ""), agent, filepath.Join(work, "printed-agent.log")); !strings.Contains(out, wantTextAnswer) {
			t.Errorf("make run's printed agent line answered:\n%s", out)
		}
	})

	t.Run("binary", func(t *testing.T) {
		home := filepath.Join(work, "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			t.Fatal(err)
		}
		script := ports(binary, freeAddr(t), freeAddr(t))
		out := runBlock(t, work, cleanEnv(home, bin), script, filepath.Join(work, "binary.log"))
		for _, want := range []string{wantJSONAnswer, wantTextAnswer} {
			if !strings.Contains(out, want) {
				t.Errorf("the binary block's output lacks %s:\n%s", want, out)
			}
		}
	})
}

// quickstartBlock returns the shell commands of the README block between
// <!-- quickstart:name --> and <!-- /quickstart -->, without the fences.
func quickstartBlock(t *testing.T, readme, name string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- quickstart:" + regexp.QuoteMeta(name) + " -->\\s*```sh\\n(.*?)```\\s*<!-- /quickstart -->")
	m := re.FindStringSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no quickstart:%s block", name)
	}
	return m[1]
}

// ports moves the README's addresses to the test's.
func ports(script, brokerBind, gatewayBind string) string {
	return strings.NewReplacer(readmeBrokerBind, brokerBind, readmeGatewayBind, gatewayBind).Replace(script)
}

// cleanEnv is a fresh user's environment: home, PATH with pathDir first
// (when set), and nothing of omp's.
func cleanEnv(home, pathDir string, extra ...string) []string {
	path := os.Getenv("PATH")
	if pathDir != "" {
		path = pathDir + string(os.PathListSeparator) + path
	}
	return append([]string{"HOME=" + home, "PATH=" + path, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8"}, extra...)
}

// runBlock runs script with bash -e in dir; it fails the test when a
// command fails and returns stdout and stderr. Servers the script starts
// in the background are stopped when it ends.
func runBlock(t *testing.T, dir string, env []string, script, logPath string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	// A file, not a pipe: background servers keep their copy of it open.
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	stopGroup(cmd.Process.Pid)
	out := readFile(t, logPath)
	if err != nil {
		t.Fatalf("%v\nscript:\n%s\noutput:\n%s", err, script, out)
	}
	return out
}

// startGroup starts cmd in its own process group, output to logPath, and
// stops the group when the test ends.
func startGroup(t *testing.T, cmd *exec.Cmd, logPath string) string {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return logPath
}

// stopGroup ends what is left of the process group pgid.
func stopGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	for range 50 {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitHealthy waits until url answers 200.
func waitHealthy(t *testing.T, url, logPath string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never answered; log:\n%s", url, readFile(t, logPath))
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// printedLine returns the first line of out that starts (after its
// indentation) with prefix.
func printedLine(t *testing.T, out, prefix string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line %q in:\n%s", prefix, out)
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
