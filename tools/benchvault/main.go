// Command benchvault measures the broker's write path (`POST /v1/credential`)
// against the reference TypeScript broker, in one run (`make bench-vault`).
//
// For every round and every target it starts a fresh broker process on a free
// loopback port with a throwaway HOME (so an empty vault and a known bearer
// token), and runs over HTTP with keep-alive:
//
//   - sequential: -seq uploads one after another into the empty vault (wall
//     time), then -probe more uploads with -seq credentials stored. "p50 empty"
//     is the median latency of the first -probe uploads of the sequential run,
//     "p50 at N" the median of the extra probe uploads;
//   - concurrent: a second fresh broker, -writers goroutines × -per-writer
//     uploads each, released together (wall time from release to last reply);
//   - loss check: after each scenario every upload must have been answered 200,
//     and GET /v1/snapshot must list every uploaded credential (by email).
//
// Every upload is a new identity (distinct email and accountId, anthropic
// OAuth), so nothing dedupes and the vault grows by one row per upload.
// Rounds are interleaved between targets (ours, ref; then ref, ours; …) so
// machine load drifts hit both alike; each figure is the median over rounds.
//
// Reading the table: "ours" and "reference" are the medians; "ratio" is
// ours ÷ reference (below 1 means ours is faster); "target" is the
// goal we set and "met" whether ours reaches it. The p50-growth row compares each
// broker with itself (p50 at N ÷ p50 empty). The loss row counts non-200
// replies plus uploads missing from the snapshot, summed over all rounds.
// Without the reference (not installed: run `make interop-install`), only
// ours is measured and the comparative rows say n/a.
//
// Targets can also be brokers that are already running (-target
// name,URL,token, repeatable; first = ours, second = reference): their vaults
// are then not fresh, so "empty" means "as found" and the snapshot check only
// looks for the credentials this run uploaded.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

type options struct {
	ours      string
	refDir    string
	rounds    int
	seq       int
	probe     int
	writers   int
	perWriter int
	jsonOut   bool
	strict    bool
	timeout   time.Duration
	targets   []string
}

func main() {
	var o options
	flag.StringVar(&o.ours, "ours", "bin/omp", "our omp binary (started as `omp auth-broker serve --bind …`)")
	flag.StringVar(&o.refDir, "ref", ".interop", "directory where the reference is npm-installed (empty: ours only)")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds per target")
	flag.IntVar(&o.seq, "seq", 1000, "sequential uploads into an empty vault")
	flag.IntVar(&o.probe, "probe", 50, "uploads whose median latency is reported (at the start and after -seq)")
	flag.IntVar(&o.writers, "writers", 16, "concurrent writers")
	flag.IntVar(&o.perWriter, "per-writer", 63, "uploads per concurrent writer")
	flag.BoolVar(&o.jsonOut, "json", false, "print the results as JSON on stdout (progress stays on stderr)")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a target is not met")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "per-request timeout")
	flag.Func("target", "use a running broker instead of starting one: name,URL,token (repeatable; first = ours, second = reference)", func(s string) error {
		if len(strings.SplitN(s, ",", 3)) != 3 {
			return errors.New("want name,URL,token")
		}
		o.targets = append(o.targets, s)
		return nil
	})
	flag.Parse()
	if o.rounds < 1 || o.seq < 1 || o.probe < 1 || o.writers < 1 || o.perWriter < 1 {
		fmt.Fprintln(os.Stderr, "benchvault: -rounds, -seq, -probe, -writers, -per-writer must be ≥ 1")
		os.Exit(2)
	}
	rep, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchvault:", err)
		os.Exit(1)
	}
	if o.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(os.Stdout)
	}
	if o.strict && !rep.AllMet {
		os.Exit(1)
	}
}

// target is one broker under test: how to get a fresh instance of it.
