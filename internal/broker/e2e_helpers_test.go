package broker_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// Timings of the broker under test: short enough that the whole file runs
// in a few seconds, long enough not to spin on a loaded machine.
const (
	testRefreshInterval = 100 * time.Millisecond
	testKeepAlive       = 200 * time.Millisecond
	testPollInterval    = 50 * time.Millisecond
	waitLong            = 5 * time.Second // upper bound of any single wait
)

// harness is one broker home: a vault directory and the fake upstreams,
// shared by the brokers started on it (restarts reuse the same paths).
type harness struct {
	dir  string
	up   *upstream
	logs *syncbuf.Buffer
	// minForced is the broker's RefreshMinForced: none by default, since
	// most tests force refreshes in a row; 0 is the broker's default.
	minForced time.Duration
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{dir: t.TempDir(), up: newUpstream(t), logs: &syncbuf.Buffer{}, minForced: -1}
}

func (h *harness) dbPath() string { return filepath.Join(h.dir, "vault.db") }

// legacyPath is the reference's agent.db beside the vault (as FromEnv
// configures it): an omp-go vault there is adopted, anything else left.
func (h *harness) legacyPath() string { return filepath.Join(h.dir, "agent.db") }

// runningBroker is one running broker.Main.
type runningBroker struct {
	m      *broker.Main
	url    string
	token  string
	client *brokerclient.Client
	stop   func() // cancel Run, wait for it, Close; idempotent
}

// config is the configuration of a broker on 127.0.0.1:0 over the harness
// paths.
func (h *harness) config() broker.Config {
	return broker.Config{
		Bind:             "127.0.0.1:0",
		DBPath:           h.dbPath(),
		LegacyDBPath:     h.legacyPath(),
		TokenPath:        filepath.Join(h.dir, "auth-broker.token"),
		KeyPath:          filepath.Join(h.dir, "vault.key"),
		Version:          "e2e-test",
		Logger:           slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HTTPClient:       &http.Client{Timeout: waitLong},
		URLs:             h.up.urls,
		RefreshInterval:  testRefreshInterval,
		RefreshMinForced: h.minForced,
		KeepAlive:        testKeepAlive,
		PollInterval:     testPollInterval,
	}
}

// start opens and runs a broker on 127.0.0.1:0 over the harness paths.
func (h *harness) start(t *testing.T) *runningBroker {
	t.Helper()
	return h.startWith(t, nil)
}

// startWith is start with the configuration changed by tune (when set)
// before Open.
func (h *harness) startWith(t *testing.T, tune func(*broker.Config)) *runningBroker {
	t.Helper()
	m := &broker.Main{Config: h.config()}
	if tune != nil {
		tune(&m.Config)
	}
	// Opening migrates and fsyncs the vault: allow for a loaded disk.
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !strings.HasPrefix(m.URL(), "http://127.0.0.1:") || strings.HasSuffix(m.URL(), ":0") {
		t.Fatalf("URL() = %q, want a bound 127.0.0.1 port", m.URL())
	}
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		t.Fatalf("read bearer token: %v", err)
	}
	token := strings.TrimSpace(string(raw))
	if len(token) != 43 {
		t.Fatalf("bearer token has %d characters, want 43", len(token))
	}

	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	b := &runningBroker{m: m, url: m.URL(), token: token, client: brokerclient.New(m.URL(), token, nil)}
	b.stop = sync.OnceFunc(func() {
		stopRun()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of cancellation")
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Cleanup(b.stop)
	return b
}

// rawResponse is a fully read plain net/http answer.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// do sends a plain HTTP request; authz is the Authorization header ("" for
// none).
func (b *runningBroker) do(t *testing.T, method, path, authz string, body io.Reader) rawResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b2, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b2)}
}

func (b *runningBroker) bearer() string { return "Bearer " + b.token }

// pumped is one result of Stream.Next.
type pumped struct {
	ev  api.Event
	err error
}

// eventPump reads a Stream on its own goroutine so that every wait in the
// test can be bounded.
type eventPump struct {
	ch    chan pumped
	close func()
}

// openStream opens GET /v1/snapshot/stream through brokerclient.Client.
func (b *runningBroker) openStream(t *testing.T) *eventPump {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := b.client.Stream(ctx)
	if err != nil {
		cancel()
		t.Fatalf("Stream: %v", err)
	}
	p := &eventPump{ch: make(chan pumped, 256)}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer s.Close() // only after Next returned: a Stream is single-goroutine
		for {
			ev, err := s.Next()
			select {
			case p.ch <- pumped{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	p.close = sync.OnceFunc(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(waitLong):
			t.Errorf("stream reader did not stop")
		}
	})
	t.Cleanup(p.close)
	return p
}

// next returns the next stream event or fails after timeout.
func (p *eventPump) next(t *testing.T, timeout time.Duration) api.Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.ch:
		if r.err != nil {
			t.Fatalf("stream: %v", r.err)
		}
		return r.ev
	case <-timer.C:
		t.Fatalf("no stream event within %v", timeout)
	}
	return api.Event{}
}

// waitFor skips events until one satisfies pred, failing after timeout.
func (p *eventPump) waitFor(t *testing.T, timeout time.Duration, what string, pred func(api.Event) bool) api.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no stream event %s within %v", what, timeout)
		}
		timer := time.NewTimer(left)
		select {
		case r := <-p.ch:
			timer.Stop()
			if r.err != nil {
				t.Fatalf("stream (waiting for %s): %v", what, r.err)
			}
			if pred(r.ev) {
				return r.ev
			}
		case <-timer.C:
			t.Fatalf("no stream event %s within %v", what, timeout)
		}
	}
}

// eventually re-checks cond every 10 ms until it holds, failing after
// timeout. It is for conditions with no event to wait on.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// awaitFullSweep waits until one whole refresher sweep has run after the
// call. The refresher's schedule shows nextSweepAt = finish + Interval
// (in the future) between sweeps and the running sweep's start (not in the
// future) during one: the first future value seen schedules a sweep that
// starts after the call, and the next distinct future value is published
// when that sweep has finished.
func awaitFullSweep(t *testing.T, b *runningBroker, timeout time.Duration) {
	t.Helper()
	var seen []int64
	eventually(t, timeout, "a full refresher sweep", func() bool {
		next := b.m.Refresher.Schedule().NextSweepAt
		if next > time.Now().UnixMilli() && (len(seen) == 0 || seen[len(seen)-1] != next) {
			seen = append(seen, next)
		}
		return len(seen) >= 2
	})
}

// waitTimeout waits for wg, failing after timeout.
func waitTimeout(t *testing.T, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// sample is one series of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the samples of a text exposition (comments skipped).
func parseMetrics(t *testing.T, body string) []sample {
	t.Helper()
	var out []sample
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			j := strings.LastIndexByte(line, '}')
			if j < i {
				t.Fatalf("metrics: malformed line %q", line)
			}
			parseLabels(t, line[i+1:j], s.labels)
			rest = strings.TrimSpace(line[j+1:])
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		val, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metrics: bad value in %q: %v", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// parseLabels parses `a="x",b="y"` (values with \" \\ \n escapes).
func parseLabels(t *testing.T, s string, into map[string]string) {
	t.Helper()
	for s != "" {
		name, rest, ok := strings.Cut(s, `="`)
		if !ok {
			t.Fatalf("metrics: malformed labels %q", s)
		}
		var val strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(rest[i])
		}
		into[strings.TrimSpace(name)] = val.String()
		s = strings.TrimPrefix(rest[min(i+1, len(rest)):], ",")
	}
}

// find returns the value of the series name whose labels include want.
func find(samples []sample, name string, want map[string]string) (float64, bool) {
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

// scrape fetches /metrics with the bearer.
func (b *runningBroker) scrape(t *testing.T) (string, []sample) {
	t.Helper()
	r := b.do(t, http.MethodGet, "/metrics", b.bearer(), nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", r.status, r.body)
	}
	return r.body, parseMetrics(t, r.body)
}

// assertNoSecrets fails if any secret occurs in text.
func assertNoSecrets(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains the secret %.16s…", where, s)
		}
	}
}

// assertNoSecretsOnDisk reads every file under dir (the vault, its -wal,
// -shm or -journal files, the key and token files) like `strings agent.db`
// and fails if any secret appears in clear. It returns the names scanned.
func assertNoSecretsOnDisk(t *testing.T, dir string, secrets []string) []string {
	t.Helper()
	sawDB := false
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "vault.db" && len(b) > 0 {
			sawDB = true
		}
		names = append(names, filepath.Base(path))
		assertNoSecrets(t, filepath.Base(path), string(b), secrets)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	if !sawDB {
		t.Fatalf("no non-empty vault.db under %s", dir)
	}
	return names
}
