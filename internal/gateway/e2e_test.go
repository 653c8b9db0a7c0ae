package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const waitLong = 5 * time.Second

// runningBroker is the real broker wiring on 127.0.0.1:0 in a temp dir.
type runningBroker struct {
	url, token string
	client     *brokerclient.Client
}

func startBroker(t *testing.T) *runningBroker {
	t.Helper()
	dir := t.TempDir()
	m := &broker.Main{Config: broker.Config{
		Bind:         "127.0.0.1:0",
		DBPath:       filepath.Join(dir, "vault.db"),
		TokenPath:    filepath.Join(dir, "auth-broker.token"),
		KeyPath:      filepath.Join(dir, "vault.key"),
		Version:      "gateway-e2e",
		Logger:       slog.New(slog.DiscardHandler),
		PollInterval: 50 * time.Millisecond,
		KeepAlive:    200 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		m.Close()
	})
	tok := strings.TrimSpace(string(raw))
	return &runningBroker{url: m.URL(), token: tok, client: brokerclient.New(m.URL(), tok, nil)}
}

// brokerConfig is a broker's configuration in a temp dir, bound to a free
// loopback port.
func brokerConfig(t *testing.T) broker.Config {
	dir := t.TempDir()
	return broker.Config{
		Bind:         "127.0.0.1:0",
		DBPath:       filepath.Join(dir, "vault.db"),
		TokenPath:    filepath.Join(dir, "auth-broker.token"),
		KeyPath:      filepath.Join(dir, "vault.key"),
		Version:      "gateway-e2e",
		Logger:       slog.New(slog.DiscardHandler),
		PollInterval: 50 * time.Millisecond,
		KeepAlive:    200 * time.Millisecond,
	}
}

// stoppableBroker is a broker a test stops before it ends.
type stoppableBroker struct {
	*runningBroker
	stop func() // stops serving and closes the vault; idempotent
}

// runBroker runs the real broker wiring with cfg until stop or the test's
// end.
func runBroker(t *testing.T, cfg broker.Config) *stoppableBroker {
	t.Helper()
	m := &broker.Main{Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	raw, err := os.ReadFile(cfg.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	stop := sync.OnceFunc(func() {
		stopRun()
		<-done
		m.Close()
	})
	t.Cleanup(stop)
	tok := strings.TrimSpace(string(raw))
	return &stoppableBroker{&runningBroker{url: m.URL(), token: tok, client: brokerclient.New(m.URL(), tok, nil)}, stop}
}

// openVault opens the vault of a stopped broker, as the CLI does on its
// host.
func openVault(t *testing.T, cfg broker.Config) *sqlite.Store {
	t.Helper()
	kr, _, err := seal.LoadOrCreateKeyFile(cfg.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), cfg.DBPath, kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runningGateway is one running gateway.Main.
type runningGateway struct {
	m    *gateway.Main
	out  *syncbuf.Buffer
	stop func() time.Duration // cancel Run and wait; returns how long Run took to return
}

func gatewayConfig(t *testing.T, b *runningBroker) gateway.Config {
	return gateway.Config{
		Bind:        "127.0.0.1:0",
		TokenPath:   filepath.Join(t.TempDir(), "omp", "auth-gateway.token"),
		BrokerURL:   b.url,
		BrokerToken: b.token,
		Logger:      slog.New(slog.DiscardHandler),
		Version:     "gateway-e2e",
	}
}

func startGateway(t *testing.T, cfg gateway.Config) *runningGateway {
	t.Helper()
	out := &syncbuf.Buffer{}
	cfg.Out = out
	m := &gateway.Main{Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("gateway Open: %v", err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	g := &runningGateway{m: m, out: out}
	var took time.Duration
	g.stop = sync.OnceValue(func() time.Duration {
		start := time.Now()
		stopRun()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway Run: %v", err)
			}
		case <-time.After(m.Config.ShutdownGrace + 5*time.Second):
			t.Errorf("gateway Run did not return within its grace period + 5s")
		}
		took = time.Since(start)
		m.Close()
		return took
	})
	t.Cleanup(func() { g.stop() })
	return g
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestGatewayServesAndFollowsBroker(t *testing.T) {
	b := startBroker(t)
	cfg := gatewayConfig(t, b)
	g := startGateway(t, cfg)

	want := "auth-gateway listening on " + g.m.URL() + "\n" +
		"bearer token: " + cfg.TokenPath + " (chmod 0600)\n" +
		"upstream broker: " + b.url + "\n"
	if got := g.out.String(); got != want {
		t.Fatalf("stdout:\n%q\nwant\n%q", got, want)
	}
	if code, body := get(t, g.m.URL()+"/healthz", ""); code != 200 || !strings.HasPrefix(body, `{"ok":true,`) || !strings.Contains(body, `"broker":{"mode":`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	for path, mode := range map[string]os.FileMode{cfg.TokenPath: 0o600, filepath.Dir(cfg.TokenPath): 0o700} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s mode %o, want %o", path, st.Mode().Perm(), mode)
		}
	}
	raw, _ := os.ReadFile(cfg.TokenPath)
	token := strings.TrimSpace(string(raw))
	if code, _ := get(t, g.m.URL()+"/v1/models", ""); code != http.StatusUnauthorized {
		t.Fatalf("no bearer: %d, want 401", code)
	}
	if code, _ := get(t, g.m.URL()+"/v1/models", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong bearer: %d, want 401", code)
	}
	if code, _ := get(t, g.m.URL()+"/v1/models", token); code == http.StatusUnauthorized {
		t.Fatalf("gateway token refused")
	}

	// The store follows a credential uploaded to the broker.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-gateway-e2e"}); err != nil {
		t.Fatalf("upload: %v", err)
	}
	for {
		es, err := g.m.Store.List(ctx, "openai")
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(es) == 1 && es[0].Credential.Key == "sk-gateway-e2e" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway's store did not see the upload: %+v", es)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if st := g.m.Store.Status(); st.Entries != 1 || st.Mode == "connecting" {
		t.Fatalf("store status %+v", st)
	}
}

func TestNoAuthNeedsOptInOffLoopback(t *testing.T) {
	b := startBroker(t)
	cfg := gatewayConfig(t, b)
	cfg.Bind, cfg.NoAuth = "0.0.0.0:0", true
	m := &gateway.Main{Config: cfg}
	err := m.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), gateway.AllowNonLoopbackNoAuthFlag) {
		m.Close()
		t.Fatalf("Open(--no-auth on 0.0.0.0) = %v, want a refusal naming %s", err, gateway.AllowNonLoopbackNoAuthFlag)
	}
	if _, err := os.Stat(cfg.TokenPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("token file touched by a refused --no-auth: %v", err)
	}

	cfg.AllowNonLoopbackNoAuth = true
	g := startGateway(t, cfg)
	if !strings.Contains(g.out.String(), "auth: disabled (--no-auth) — any client can call this gateway\n") {
		t.Fatalf("stdout lacks the no-auth warning: %q", g.out.String())
	}
	url := "http://127.0.0.1:" + g.m.URL()[strings.LastIndexByte(g.m.URL(), ':')+1:]
	if code, _ := get(t, url+"/v1/models", ""); code == http.StatusUnauthorized {
		t.Fatalf("--no-auth still asks for a bearer")
	}
	if _, err := os.Stat(cfg.TokenPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--no-auth created a token file: %v", err)
	}

	// Loopback --no-auth needs no opt-in.
	cfg = gatewayConfig(t, b)
	cfg.NoAuth = true
	startGateway(t, cfg)
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.3.4.5": true, "localhost": true, "LOCALHOST": true, "::1": true, "[::1]": true,
		"0.0.0.0": false, "::": false, "[::]": false, "10.0.0.1": false, "example.com": false,
	} {
		if got := gateway.IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestOpenNeedsBroker(t *testing.T) {
	cfg := gateway.Config{Bind: "127.0.0.1:0", TokenPath: filepath.Join(t.TempDir(), "t"), Out: io.Discard}
	err := (&gateway.Main{Config: cfg}).Open(context.Background())
	if err == nil || err.Error() != gateway.MsgNoBroker {
		t.Fatalf("no broker: %v", err)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + ln.Addr().String()
	ln.Close()
	cfg.BrokerURL, cfg.BrokerToken = down, "tok"
	cfg.Logger = slog.New(slog.DiscardHandler)
	err = (&gateway.Main{Config: cfg}).Open(context.Background())
	var se *gateway.SnapshotError
	if !errors.As(err, &se) || err.Error() != "Auth broker returned no initial snapshot" {
		t.Fatalf("broker down: %v", err)
	}
	if _, err := os.Stat(cfg.TokenPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a gateway that did not start created its token file: %v", err)
	}

	b := startBroker(t)
	cfg.BrokerURL, cfg.BrokerToken = b.url, "not-the-token"
	if err := (&gateway.Main{Config: cfg}).Open(context.Background()); !errors.As(err, &se) {
		t.Fatalf("wrong broker token: %v", err)
	}
}

func TestShutdownWithinGrace(t *testing.T) {
	b := startBroker(t)
	cfg := gatewayConfig(t, b)
	cfg.ShutdownGrace = 300 * time.Millisecond
	g := startGateway(t, cfg)

	// A request whose headers never finish keeps its connection active, so
	// the shutdown can only end by the grace bound.
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.m.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	// An idle keep-alive connection must not hold it up either.
	idle, err := net.Dial("tcp", strings.TrimPrefix(g.m.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	if line, err := bufio.NewReader(idle).ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("keep-alive request: %q %v", line, err)
	}
	time.Sleep(50 * time.Millisecond) // let the server see the first bytes

	// Not bounded by the grace, the shutdown would last until the 10 s
	// header timeout closed the half-sent request; the bound leaves a
	// loaded machine seconds of slack below that.
	took := g.stop()
	t.Logf("shutdown took %v with a %v grace", took, cfg.ShutdownGrace)
	if took > cfg.ShutdownGrace+5*time.Second {
		t.Fatalf("shutdown took %v with a %v grace", took, cfg.ShutdownGrace)
	}
}

// The gateway relays the broker's usage history (for the usage page it
// serves), keeping the broker's 400, and serves the page itself unauthenticated.
func TestGatewayRelaysUsageHistory(t *testing.T) {
	b := startBroker(t)
	cfg := gatewayConfig(t, b)
	g := startGateway(t, cfg)
	raw, _ := os.ReadFile(cfg.TokenPath)
	token := strings.TrimSpace(string(raw))
	if code, body := get(t, g.m.URL()+"/v1/usage/history?days=2", token); code != 200 || !strings.HasPrefix(body, `{"generatedAt":`) || !strings.HasSuffix(body, `"entries":[]}`) {
		t.Fatalf("history: %d %s", code, body)
	}
	if code, body := get(t, g.m.URL()+"/v1/usage/history?days=0", token); code != 400 || !strings.Contains(body, "days must be an integer from 1 to 400") {
		t.Fatalf("bad days: %d %s", code, body)
	}
	if code, _ := get(t, g.m.URL()+"/v1/usage/history", ""); code != http.StatusUnauthorized {
		t.Fatalf("history without a token: %d", code)
	}
	if code, body := get(t, g.m.URL()+"/usage", ""); code != 200 || !strings.Contains(body, "/v1/usage/history") {
		t.Fatalf("page: %d", code)
	}
}

// TestGatewayServesThroughBrokerOutage: a gateway restarted while its
// broker is stopped starts from the snapshot cache its previous run wrote
// and serves the cached credential against the upstream; without a cache
// it refuses to start. Once the broker is back on its address the gateway
// catches up: a credential added to the vault during the outage is the
// one used, and the one disabled meanwhile is gone.
func TestGatewayServesThroughBrokerOutage(t *testing.T) {
	var mu sync.Mutex
	var keys []string // x-api-key of every upstream request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("x-api-key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicHello)
	}))
	t.Cleanup(up.Close)
	lastKey := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(keys) == 0 {
			return ""
		}
		return keys[len(keys)-1]
	}

	bcfg := brokerConfig(t)
	b := runBroker(t, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*waitLong)
	defer cancel()
	before, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-before"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := gatewayConfig(t, b.runningBroker)
	cfg.URLs = func(provider, kind string) string {
		if kind == "baseUrl" {
			return up.URL
		}
		return ""
	}
	cfg.SnapshotCache = &remote.Cache{Path: filepath.Join(t.TempDir(), "cache", "auth-broker-snapshot.enc"),
		Token: b.token, URL: b.url, TTL: time.Hour}
	chat := func(g *runningGateway) (int, string) {
		t.Helper()
		raw, _ := os.ReadFile(cfg.TokenPath)
		req, _ := http.NewRequest(http.MethodPost, g.m.URL()+"/v1/chat/completions",
			strings.NewReader(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(raw)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	g := startGateway(t, cfg)
	if code, body := chat(g); code != 200 || !strings.Contains(body, "Hello") || lastKey() != "sk-ant-before" {
		t.Fatalf("with the broker up: %d %.300s, upstream key %q", code, body, lastKey())
	}
	g.stop()

	// The broker stops; while it is down the vault changes under it.
	b.stop()
	st := openVault(t, bcfg)
	if err := st.Disable(ctx, before[0].ID, "rotated during the outage"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Upsert(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-added"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	noCache := cfg
	noCache.SnapshotCache = nil
	var se *gateway.SnapshotError
	if err := (&gateway.Main{Config: noCache}).Open(ctx); !errors.As(err, &se) {
		t.Fatalf("restart without a cache while the broker is down: %v, want SnapshotError", err)
	}
	g = startGateway(t, cfg)
	if code, body := chat(g); code != 200 || !strings.Contains(body, "Hello") || lastKey() != "sk-ant-before" {
		t.Fatalf("restarted during the outage: %d %.300s, upstream key %q, want the cached sk-ant-before", code, body, lastKey())
	}
	if s := g.m.Store.Status(); s.Mode != remote.ModeCache && s.Mode != remote.ModeBackoff {
		t.Fatalf("store status %+v, want serving the cache", s)
	}

	// The broker comes back on the same address and vault.
	bcfg.Bind = strings.TrimPrefix(b.url, "http://")
	runBroker(t, bcfg)
	deadline := time.Now().Add(4 * waitLong)
	for {
		l, err := g.m.Store.List(ctx, "anthropic")
		if err == nil && len(l) == 1 && l[0].Credential.Key == "sk-ant-added" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not catch up with the broker: %+v %v (status %+v)", l, err, g.m.Store.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := chat(g); code != 200 || lastKey() != "sk-ant-added" {
		t.Fatalf("after the broker came back: %d %.300s, upstream key %q, want sk-ant-added", code, body, lastKey())
	}
}

// anthropicHello is an Anthropic Messages stream answering "Hello".
const anthropicHello = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// A --no-auth gateway on loopback, as `omp auth-gateway serve --no-auth`
// runs it: a web page's cross-origin POST (text/plain, no preflight) and a
// rebound DNS name are refused before the upstream sees anything; local
// JSON clients and the allow-listed host and origin are served.
func TestNoAuthGatewayRefusesWebPages(t *testing.T) {
	var upstreamCalls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamCalls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicHello)
	}))
	t.Cleanup(up.Close)
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-e2e"}); err != nil {
		t.Fatalf("upload: %v", err)
	}
	cfg := gatewayConfig(t, b)
	cfg.NoAuth = true
	cfg.AllowedHosts, cfg.AllowedOrigins = []string{"gw.internal"}, []string{"http://app.internal"}
	cfg.URLs = func(provider, kind string) string {
		if kind == "baseUrl" {
			return up.URL
		}
		return ""
	}
	g := startGateway(t, cfg)
	port := g.m.URL()[strings.LastIndexByte(g.m.URL(), ':'):]

	post := func(host string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, g.m.URL()+"/v1/chat/completions",
			strings.NewReader(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`))
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := post("", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}); code != 403 || !strings.Contains(body, "Origin http://evil.example is not allowed") {
		t.Errorf("cross-origin text/plain POST: %d %s", code, body)
	}
	if code, body := post("evil.example"+port, map[string]string{"Content-Type": "application/json"}); code != 403 || !strings.Contains(body, "Host evil.example"+port+" is not allowed") {
		t.Errorf("rebound DNS name: %d %s", code, body)
	}
	if code, body := post("", map[string]string{"Content-Type": "text/plain"}); code != 415 {
		t.Errorf("text/plain without Origin: %d %s", code, body)
	}
	if n := upstreamCalls.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests from refused callers", n)
	}
	for name, tc := range map[string]struct {
		host   string
		header map[string]string
	}{
		"SDK-style JSON":    {"", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer ignored"}},
		"allowed host":      {"gw.internal" + port, map[string]string{"Content-Type": "application/json"}},
		"allowed origin":    {"", map[string]string{"Content-Type": "application/json", "Origin": "http://app.internal"}},
		"localhost by name": {"localhost" + port, map[string]string{"Content-Type": "application/json"}},
	} {
		if code, body := post(tc.host, tc.header); code != 200 || !strings.Contains(body, "Hello") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if n := upstreamCalls.Load(); n != 4 {
		t.Errorf("the upstream got %d requests, want 4", n)
	}
}
