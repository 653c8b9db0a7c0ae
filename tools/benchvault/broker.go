package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
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

// startBroker starts a fresh broker with an empty vault (benchproc.StartBroker).
func startBroker(name string, argv []string) (*instance, error) {
	b, err := benchproc.StartBroker("benchvault-"+name, argv)
	if err != nil {
		return nil, err
	}
	return &instance{url: b.URL, token: b.Token, stop: b.Stop}, nil
}

// roundResult is one target's figures in one round.
