package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ompgo/omp/internal/benchproc"
)

type target struct {
	Name     string
	external *instance                 // a running broker (not restarted per round)
	start    func() (*instance, error) // a fresh broker with an empty vault
}

// instance is one running broker.
type instance struct {
	url, token string
	stop       func()
}

func run(o options) (*report, error) {
	rep := &report{Config: config{Rounds: o.rounds, Sequential: o.seq, Probe: o.probe, Writers: o.writers, PerWriter: o.perWriter}}
	var targets []*target
	if len(o.targets) > 0 {
		for i, s := range o.targets {
			p := strings.SplitN(s, ",", 3)
			name := p[0]
			if i == 0 {
				name = "ours"
			} else if i == 1 {
				name = "reference"
			}
			targets = append(targets, &target{Name: name, external: &instance{url: strings.TrimRight(p[1], "/"), token: p[2], stop: func() {}}})
		}
		rep.Notes = append(rep.Notes, "external targets: vaults are not fresh; \"empty\" means as found")
	} else {
		rep.Fresh = true
		ours, err := filepath.Abs(o.ours)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(ours); err != nil {
			return nil, fmt.Errorf("our broker: %w (run make build)", err)
		}
		targets = append(targets, &target{Name: "ours", start: func() (*instance, error) {
			return startBroker("ours", []string{ours, "auth-broker", "serve"})
		}})
		bun := filepath.Join(o.refDir, "node_modules/@oven/bun-linux-x64/bin/bun")
		cli := filepath.Join(o.refDir, "node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js")
		if o.refDir == "" || !isFile(bun) || !isFile(cli) {
			msg := "reference broker not installed (no " + filepath.Join(o.refDir, "node_modules") + "; `make interop-install` needs npm): measuring ours only"
			rep.Notes = append(rep.Notes, msg)
			fmt.Fprintln(os.Stderr, "benchvault:", msg)
		} else {
			bun, _ = filepath.Abs(bun)
			cli, _ = filepath.Abs(cli)
			rep.Reference = referenceVersion(o.refDir)
			targets = append(targets, &target{Name: "reference", start: func() (*instance, error) {
				return startBroker("reference", []string{bun, cli, "auth-broker", "serve"})
			}})
		}
	}
	rep.LoadBefore = benchproc.LoadAvg()
	start := time.Now()
	for r := 1; r <= o.rounds; r++ {
		order := slices.Clone(targets)
		if r%2 == 0 {
			slices.Reverse(order) // ours, ref; ref, ours; … so drift hits both alike
		}
		for _, t := range order {
			res, err := runRound(o, t, r)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r, t.Name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d/%d %-9s seq %6.2fs  p50 %6.2fms → %6.2fms  concurrent %6.2fs  non-200 %d  missing %d\n",
				r, o.rounds, t.Name, res.SeqWallS, res.P50EmptyMs, res.P50FullMs, res.ConcWallS, res.Non200, res.Missing)
			rep.Runs = append(rep.Runs, res)
		}
	}
	rep.TotalS = time.Since(start).Seconds()
	rep.LoadAfter = benchproc.LoadAvg()
	if n := float64(runtime.NumCPU()); rep.LoadBefore > n || rep.LoadAfter > n {
		rep.Notes = append(rep.Notes, fmt.Sprintf("machine busy (load average %.1f before, %.1f after, %d CPUs): absolute figures are inflated, compare the interleaved ratios", rep.LoadBefore, rep.LoadAfter, runtime.NumCPU()))
	}
	rep.summarise(targets)
	return rep, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func referenceVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules/@oh-my-pi/pi-coding-agent/package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	_ = json.Unmarshal(b, &p)
	return p.Version
}

// startBroker runs argv + --bind 127.0.0.1:<free port> with HOME in a new
// temp dir (and no OMP_/PI_/XDG_ variables of ours leaking in), pre-writes
// the bearer token both brokers read from ~/.omp/auth-broker.token, and
// waits for /v1/healthz.
func startBroker(name string, argv []string) (*instance, error) {
	home, err := os.MkdirTemp("", "benchvault-"+name+"-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*instance, error) { os.RemoveAll(home); return nil, err }
	token := fmt.Sprintf("benchvault-%d-%d", time.Now().UnixNano(), os.Getpid())
	if err := os.MkdirAll(filepath.Join(home, ".omp"), 0o700); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".omp", "auth-broker.token"), []byte(token), 0o600); err != nil {
		return fail(err)
	}
	port, err := benchproc.FreePort()
	if err != nil {
		return fail(err)
	}
	logf, err := os.Create(filepath.Join(home, "broker.log"))
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(argv[0], append(argv[1:], "--bind", fmt.Sprintf("127.0.0.1:%d", port))...)
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(benchproc.CleanEnv(), "HOME="+home)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fail(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		os.RemoveAll(home)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(home, "broker.log"))
			stop()
			return nil, fmt.Errorf("%s broker exited at startup:\n%s", name, tail(log, 2000))
		default:
		}
		if resp, err := http.Get(url + "/v1/healthz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(home, "broker.log"))
			stop()
			return nil, fmt.Errorf("%s broker not healthy after 60s:\n%s", name, tail(log, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &instance{url: url, token: token, stop: stop}, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// roundResult is one target's figures in one round.
