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
// ours ÷ reference (below 1 means ours is faster); "target" is the issue 15
// goal and "met" whether ours reaches it. The p50-growth row compares each
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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
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
	rep.LoadBefore = loadAvg()
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
	rep.LoadAfter = loadAvg()
	if n := float64(runtime.NumCPU()); rep.LoadBefore > n || rep.LoadAfter > n {
		rep.Notes = append(rep.Notes, fmt.Sprintf("machine busy (load average %.1f before, %.1f after, %d CPUs): absolute figures are inflated, compare the interleaved ratios", rep.LoadBefore, rep.LoadAfter, runtime.NumCPU()))
	}
	rep.summarise(targets)
	return rep, nil
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
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
	port, err := freePort()
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
	cmd.Env = append(cleanEnv(), "HOME="+home)
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

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "OMP_") || strings.HasPrefix(k, "PI_") || strings.HasPrefix(k, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// roundResult is one target's figures in one round.
type roundResult struct {
	Round      int      `json:"round"`
	Target     string   `json:"target"`
	SeqWallS   float64  `json:"sequentialWallS"`
	P50EmptyMs float64  `json:"p50EmptyMs"`
	P50FullMs  float64  `json:"p50FullMs"`
	ConcWallS  float64  `json:"concurrentWallS"`
	Uploads    int      `json:"uploads"`
	Non200     int      `json:"non200"`
	Missing    int      `json:"missingFromSnapshot"`
	Errors     []string `json:"errors,omitempty"`
}

func runRound(o options, t *target, round int) (roundResult, error) {
	res := roundResult{Round: round, Target: t.Name}
	get := func() (*instance, error) {
		if t.external != nil {
			return t.external, nil
		}
		return t.start()
	}
	runID := fmt.Sprintf("%x-r%d", time.Now().UnixNano()&0xffffffffff, round)

	// Sequential, then the probe at N stored.
	inst, err := get()
	if err != nil {
		return res, err
	}
	c := newClient(inst, 1, o.timeout)
	c.warmUp()
	var lat []time.Duration
	var emails []string
	begin := time.Now()
	for i := range o.seq {
		email := fmt.Sprintf("seq-%s-%d@bench.example", runID, i)
		d, err := c.upload(email, fmt.Sprintf("acct-seq-%s-%d", runID, i))
		res.note(err)
		emails = append(emails, email)
		if i < o.probe {
			lat = append(lat, d)
		}
	}
	res.SeqWallS = time.Since(begin).Seconds()
	res.P50EmptyMs = ms(median(lat))
	lat = lat[:0]
	for i := range o.probe {
		email := fmt.Sprintf("probe-%s-%d@bench.example", runID, i)
		d, err := c.upload(email, fmt.Sprintf("acct-probe-%s-%d", runID, i))
		res.note(err)
		emails = append(emails, email)
		lat = append(lat, d)
	}
	res.P50FullMs = ms(median(lat))
	res.Missing += c.missing(emails)
	inst.stop()

	// Concurrent, on a fresh vault.
	if inst, err = get(); err != nil {
		return res, err
	}
	c = newClient(inst, o.writers, o.timeout)
	c.warmUp()
	emails = emails[:0]
	var mu sync.Mutex
	var wg sync.WaitGroup
	release := make(chan struct{})
	for w := range o.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			for i := range o.perWriter {
				email := fmt.Sprintf("conc-%s-%d-%d@bench.example", runID, w, i)
				_, err := c.upload(email, fmt.Sprintf("acct-conc-%s-%d-%d", runID, w, i))
				mu.Lock()
				res.note(err)
				emails = append(emails, email)
				mu.Unlock()
			}
		}()
	}
	begin = time.Now()
	close(release)
	wg.Wait()
	res.ConcWallS = time.Since(begin).Seconds()
	res.Missing += c.missing(emails)
	inst.stop()
	return res, nil
}

// note counts one upload; err non-nil means it was not answered 200.
func (r *roundResult) note(err error) {
	r.Uploads++
	if err != nil {
		r.Non200++
		if len(r.Errors) < 5 {
			r.Errors = append(r.Errors, err.Error())
		}
	}
}

type client struct {
	inst *instance
	http *http.Client
	far  int64
}

func newClient(inst *instance, conns int, timeout time.Duration) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &client{inst: inst, http: &http.Client{Transport: tr, Timeout: timeout},
		far: time.Now().Add(365 * 24 * time.Hour).UnixMilli()}
}

func (c *client) do(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, c.inst.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.inst.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *client) warmUp() { _, _, _ = c.do("GET", "/v1/snapshot", nil) }

// upload stores one new anthropic OAuth identity; the duration covers the
// whole exchange including reading the reply (all active rows of the
// provider, as the API requires).
func (c *client) upload(email, account string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{
		"provider": "anthropic",
		"credential": map[string]any{
			"type": "oauth", "access": "sk-ant-oat01-" + account, "refresh": "sk-ant-ort01-" + account,
			"expires": c.far, "email": email, "accountId": account,
		},
	})
	t0 := time.Now()
	code, b, err := c.do("POST", "/v1/credential", body)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if code != 200 {
		return d, fmt.Errorf("upload %s: HTTP %d %s", email, code, tail(b, 200))
	}
	return d, nil
}

// missing returns how many of emails the snapshot does not list.
func (c *client) missing(emails []string) int {
	code, b, err := c.do("GET", "/v1/snapshot", nil)
	if err != nil || code != 200 {
		fmt.Fprintf(os.Stderr, "benchvault: snapshot: HTTP %d %v\n", code, err)
		return len(emails)
	}
	var snap struct {
		Credentials []struct {
			Provider   string `json:"provider"`
			Credential struct {
				Email string `json:"email"`
			} `json:"credential"`
		} `json:"credentials"`
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		fmt.Fprintf(os.Stderr, "benchvault: snapshot: %v\n", err)
		return len(emails)
	}
	have := make(map[string]bool, len(snap.Credentials))
	for _, e := range snap.Credentials {
		if e.Provider == "anthropic" {
			have[e.Credential.Email] = true
		}
	}
	n := 0
	for _, e := range emails {
		if !have[e] {
			n++
		}
	}
	return n
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type config struct {
	Rounds     int `json:"rounds"`
	Sequential int `json:"sequential"`
	Probe      int `json:"probe"`
	Writers    int `json:"writers"`
	PerWriter  int `json:"perWriter"`
}

// row is one line of the table; nil figures are "not measured".
type row struct {
	Scenario  string   `json:"scenario"`
	Unit      string   `json:"unit"`
	Ours      *float64 `json:"ours"`
	Reference *float64 `json:"reference"`
	Ratio     *float64 `json:"ratio"` // ours ÷ reference
	Target    string   `json:"target"`
	Met       *bool    `json:"met"` // nil: no target or not decidable
}

type report struct {
	Config    config        `json:"config"`
	Reference string        `json:"referenceVersion,omitempty"`
	Fresh     bool          `json:"freshVaults"`
	Notes     []string      `json:"notes,omitempty"`
	Runs      []roundResult `json:"rounds"`
	Rows      []row         `json:"summary"`
	AllMet    bool          `json:"allTargetsMet"`
	TotalS    float64       `json:"totalS"`
	// 1-minute load averages (Linux /proc/loadavg; 0 elsewhere).
	LoadBefore float64 `json:"loadAvgBefore"`
	LoadAfter  float64 `json:"loadAvgAfter"`
}

func (r *report) summarise(targets []*target) {
	med := func(name string, f func(roundResult) float64) *float64 {
		var xs []float64
		for _, x := range r.Runs {
			if x.Target == name {
				xs = append(xs, f(x))
			}
		}
		if len(xs) == 0 {
			return nil
		}
		m := median(xs)
		return &m
	}
	sum := func(name string, f func(roundResult) int) *float64 {
		var s float64
		found := false
		for _, x := range r.Runs {
			if x.Target == name {
				s += float64(f(x))
				found = true
			}
		}
		if !found {
			return nil
		}
		return &s
	}
	div := func(a, b *float64) *float64 {
		if a == nil || b == nil || *b == 0 {
			return nil
		}
		q := *a / *b
		return &q
	}
	le := func(x *float64, limit float64) *bool {
		if x == nil {
			return nil
		}
		ok := *x <= limit
		return &ok
	}
	refName := ""
	if len(targets) > 1 {
		refName = targets[1].Name
	}
	seqO, seqR := med("ours", func(x roundResult) float64 { return x.SeqWallS }), med(refName, func(x roundResult) float64 { return x.SeqWallS })
	p0O, p0R := med("ours", func(x roundResult) float64 { return x.P50EmptyMs }), med(refName, func(x roundResult) float64 { return x.P50EmptyMs })
	pnO, pnR := med("ours", func(x roundResult) float64 { return x.P50FullMs }), med(refName, func(x roundResult) float64 { return x.P50FullMs })
	grO := med("ours", func(x roundResult) float64 { return x.P50FullMs / x.P50EmptyMs })
	grR := med(refName, func(x roundResult) float64 { return x.P50FullMs / x.P50EmptyMs })
	cO, cR := med("ours", func(x roundResult) float64 { return x.ConcWallS }), med(refName, func(x roundResult) float64 { return x.ConcWallS })
	lost := func(x roundResult) int { return x.Non200 + x.Missing }
	lO, lR := sum("ours", lost), sum(refName, lost)

	c := r.Config
	seqRatio, concRatio := div(seqO, seqR), div(cO, cR)
	zero := func(x *float64) *bool {
		if x == nil {
			return nil
		}
		ok := *x == 0
		return &ok
	}
	r.Rows = []row{
		{Scenario: fmt.Sprintf("%d sequential uploads, empty vault (wall)", c.Sequential), Unit: "s", Ours: seqO, Reference: seqR, Ratio: seqRatio, Target: "ours ≤ 1 × ref", Met: le(seqRatio, 1)},
		{Scenario: fmt.Sprintf("upload p50, vault empty (first %d)", c.Probe), Unit: "ms", Ours: p0O, Reference: p0R, Ratio: div(p0O, p0R)},
		{Scenario: fmt.Sprintf("upload p50, %d stored (next %d)", c.Sequential, c.Probe), Unit: "ms", Ours: pnO, Reference: pnR, Ratio: div(pnO, pnR)},
		{Scenario: fmt.Sprintf("p50 growth (%d stored ÷ empty)", c.Sequential), Unit: "×", Ours: grO, Reference: grR, Ratio: div(grO, grR), Target: "ours ≤ 2 × ours empty", Met: le(grO, 2)},
		{Scenario: fmt.Sprintf("%d writers × %d uploads (wall)", c.Writers, c.PerWriter), Unit: "s", Ours: cO, Reference: cR, Ratio: concRatio, Target: "ours ≤ 0.5 × ref", Met: le(concRatio, 0.5)},
		{Scenario: "acknowledged uploads lost (non-200 + missing)", Unit: "", Ours: lO, Reference: lR, Target: "0", Met: zero(lO)},
	}
	r.AllMet = true
	for _, x := range r.Rows {
		if x.Target != "" && (x.Met == nil || !*x.Met) {
			r.AllMet = false
		}
	}
}

func (r *report) print(w io.Writer) {
	c := r.Config
	ref := "reference"
	if r.Reference != "" {
		ref += " " + r.Reference
	}
	if len(r.Rows) > 0 && r.Rows[0].Reference == nil {
		ref = "no reference: ours only"
	} else {
		ref = "ours vs " + ref
	}
	vaults := "fresh vault per scenario"
	if !r.Fresh {
		vaults = "running brokers"
	}
	fmt.Fprintf(w, "\nbench-vault: %d interleaved rounds, %s, medians over rounds (%s)\n", c.Rounds, vaults, ref)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tours\treference\tratio\ttarget\tmet")
	for _, x := range r.Rows {
		met := "–"
		if x.Target != "" {
			met = "n/a"
			if x.Met != nil {
				met = map[bool]string{true: "yes", false: "NO"}[*x.Met]
			}
		}
		target := x.Target
		if target == "" {
			target = "–"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Scenario, fmtVal(x.Ours, x.Unit), fmtVal(x.Reference, x.Unit), fmtVal(x.Ratio, "×"), target, met)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nall targets met: %v   (total %.0fs; -json for per-round figures)\n", r.AllMet, r.TotalS)
}

func fmtVal(v *float64, unit string) string {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return "n/a"
	}
	switch unit {
	case "":
		if *v == math.Trunc(*v) && math.Abs(*v) < 1e15 {
			return fmt.Sprintf("%.0f", *v)
		}
		return fmt.Sprintf("%.2f", *v)
	case "×":
		return fmt.Sprintf("%.2f×", *v)
	default:
		return fmt.Sprintf("%.2f %s", *v, unit)
	}
}
