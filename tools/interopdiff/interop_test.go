//go:build interop

package interopdiff

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/tools/benchproc"
)

var (
	refDir = flag.String("ref", "../../.interop", "directory holding the reference install (node_modules/@oh-my-pi/pi-coding-agent and bun)")
	ompBin = flag.String("omp", "../../bin/omp", "our omp binary")
	keep   = flag.Bool("keep", false, "keep the brokers' homes and logs")
	dump   = flag.Bool("dump", false, "print both brokers' normalised results of every step of a differing sequence")
)

type reference struct{ bun, cli, dir string }

func needReference(t *testing.T) reference {
	t.Helper()
	dir, err := filepath.Abs(*refDir)
	if err != nil {
		t.Fatal(err)
	}
	r := reference{dir: dir,
		bun: filepath.Join(dir, "node_modules/@oven/bun-linux-x64/bin/bun"),
		cli: filepath.Join(dir, "node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js")}
	for _, p := range []string{r.bun, r.cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("reference not installed (%v): run `make interop-install` or pass -ref", err)
		}
	}
	return r
}

func ourBinary(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(*ompBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("our omp binary: %v (run `make build` or pass -omp)", err)
	}
	return p
}

// tokenEnv points our broker's token endpoints at fake, on the paths the
// reference uses for the real hosts (so the upstream logs compare).
func tokenEnv(fake *TokenServer) []string {
	paths := map[string]string{
		"anthropic": "/v1/oauth/token", "openai-codex": "/oauth/token", "google-gemini-cli": "/token",
		"google-antigravity": "/token", "gitlab-duo": "/oauth/token",
	}
	var env []string
	for id, p := range paths {
		env = append(env, config.ProviderURLEnv(id, config.TokenURL)+"="+fake.URL+p)
	}
	return env
}

// proxyEnv sends a reference process's https traffic (its token endpoints
// and probes) to fake; loopback stays direct.
func proxyEnv(fake *TokenServer) []string {
	return []string{"HTTPS_PROXY=" + fake.ProxyURL(), "https_proxy=" + fake.ProxyURL(),
		"NODE_TLS_REJECT_UNAUTHORIZED=0", "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

func startTargets(t *testing.T, ref reference, omp string) (*Target, *Target) {
	t.Helper()
	var targets [2]*Target
	var errs [2]error
	var wg sync.WaitGroup
	start := func(i int, name string, argv []string, env func(*TokenServer) []string) {
		defer wg.Done()
		fake, err := StartTokenServer()
		if err != nil {
			errs[i] = err
			return
		}
		t.Cleanup(fake.Close)
		b, err := benchproc.StartBroker("interopdiff-"+name, argv, env(fake)...)
		if err != nil {
			errs[i] = err
			return
		}
		t.Cleanup(func() {
			b.Keep = *keep || t.Failed()
			if b.Keep {
				t.Logf("%s broker home and log kept: %s", name, b.Home)
			}
			b.Stop()
		})
		targets[i] = &Target{Name: name, URL: b.URL, Token: b.Token, Fake: fake, Client: &http.Client{}}
	}
	wg.Add(2)
	go start(0, "reference", []string{ref.bun, ref.cli, "auth-broker", "serve"}, proxyEnv)
	go start(1, "ours", []string{omp, "auth-broker", "serve"}, tokenEnv)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return targets[0], targets[1]
}

// TestDifferential replays Sequences against the reference broker and ours
// and fails on every difference no accepted difference explains.
func TestDifferential(t *testing.T) {
	ref, ours := startTargets(t, needReference(t), ourBinary(t))
	ctx := context.Background()
	began := time.Now()
	accepted := map[string][]string{} // decision id → sequences
	var failed []string               // sequence names
	for _, seq := range Sequences {
		var res [2][]Result
		var errs [2]error
		var wg sync.WaitGroup
		for i, tg := range []*Target{ref, ours} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if errs[i] = tg.Reset(ctx); errs[i] == nil {
					res[i] = tg.Run(ctx, seq)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: reset: %v", seq.Name, err)
			}
		}
		rep := CompareSequence(seq, res[0], res[1])
		fmt.Println(rep.Line())
		if rep.Failed() {
			failed = append(failed, seq.Name)
			if *dump {
				for i := range seq.Steps {
					fmt.Printf("    step %d %s\n      ref  %s\n      ours %s\n", i+1, seq.Steps[i].label(), clip(compact(res[0][i]), 1500), clip(compact(res[1][i]), 1500))
				}
			}
		}
		for _, s := range rep.Steps {
			for _, a := range s.Accepted {
				if a != "" && !slices.Contains(accepted[a], seq.Name) {
					accepted[a] = append(accepted[a], seq.Name)
				}
			}
		}
	}
	ids := make([]string, 0, len(accepted))
	for id := range accepted {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Printf("\naccepted differences (%d decisions):\n", len(ids))
	for _, id := range ids {
		fmt.Printf("  %s: %s\n      in: %s\n", id, Decisions[id].Title, strings.Join(accepted[id], "; "))
	}
	fmt.Printf("\n%d sequences in %s, %d differ without a decision\n", len(Sequences), time.Since(began).Round(time.Second), len(failed))
	if len(failed) > 0 {
		t.Errorf("%d of %d sequences differ without an accepted difference (the DIFFERS lines above; -dump shows every step): %s",
			len(failed), len(Sequences), strings.Join(failed, "; "))
	}
}
