package benchproc

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Broker is one broker process started by StartBroker.
type Broker struct {
	URL   string // http://127.0.0.1:<port>
	Token string // its bearer token
	Home  string // its throwaway HOME (removed by Stop unless Keep)
	Log   string // its combined stdout and stderr file, inside Home
	// Keep leaves Home (and the log) on disk after Stop, for a failed run.
	Keep bool
	stop func()
}

// Stop ends the broker (SIGTERM, then SIGKILL after 5 s) and removes its
// home unless Keep is set.
func (b *Broker) Stop() { b.stop() }

// StartBroker runs argv + --bind 127.0.0.1:<free port> with HOME in a new
// temp dir, the clean environment of CleanEnv plus env (so no OMP_, PI_ or
// XDG_ variable of the caller leaks in), pre-writes the bearer token both
// our broker and the reference read from ~/.omp/auth-broker.token, and
// waits up to 60 s for /v1/healthz. name prefixes the temp dir and errors.
func StartBroker(name string, argv []string, env ...string) (*Broker, error) {
	home, err := os.MkdirTemp("", "omp-"+name+"-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Broker, error) { os.RemoveAll(home); return nil, err }
	token := fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), os.Getpid())
	if err := os.MkdirAll(filepath.Join(home, ".omp"), 0o700); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".omp", "auth-broker.token"), []byte(token), 0o600); err != nil {
		return fail(err)
	}
	port, err := FreePort()
	if err != nil {
		return fail(err)
	}
	logPath := filepath.Join(home, "broker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(argv[0], append(argv[1:], "--bind", fmt.Sprintf("127.0.0.1:%d", port))...)
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(CleanEnv(), "HOME="+home), env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fail(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b := &Broker{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: token, Home: home, Log: logPath}
	b.stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if !b.Keep {
			os.RemoveAll(home)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			b.stop()
			return nil, fmt.Errorf("%s broker exited at startup:\n%s", name, Tail(log, 2000))
		default:
		}
		if resp, err := http.Get(b.URL + "/v1/healthz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return b, nil
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			b.stop()
			return nil, fmt.Errorf("%s broker not healthy after 60s:\n%s", name, Tail(log, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Tail returns the last n bytes of b as a string.
func Tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
