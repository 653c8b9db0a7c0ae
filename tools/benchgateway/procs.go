package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/tools/benchproc"
)

// runningBroker is the real broker wiring, in this process, with one anthropic
// API-key credential.
type runningBroker struct {
	url, token string
	port       string // the listening port, for URLs on other addresses
	stop       func()
}

// startBroker runs a broker in this process on 127.0.0.1 with one
// anthropic API key.
func startBroker() (*runningBroker, error) { return startBrokerOn("127.0.0.1:0") }

// startBrokerOn is startBroker listening on bind.
func startBrokerOn(bind string) (*runningBroker, error) {
	dir, err := os.MkdirTemp("", "benchgateway-broker-")
	if err != nil {
		return nil, err
	}
	m := &broker.Main{Config: broker.Config{
		Bind:      bind,
		DBPath:    filepath.Join(dir, "vault.db"),
		TokenPath: filepath.Join(dir, "auth-broker.token"),
		KeyPath:   filepath.Join(dir, "vault.key"),
		Version:   "benchgateway",
		Logger:    slog.New(slog.DiscardHandler),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	b := &runningBroker{url: m.URL(), port: m.URL()[strings.LastIndexByte(m.URL(), ':')+1:], token: strings.TrimSpace(string(raw)), stop: func() {
		stop()
		<-done
		m.Close()
		os.RemoveAll(dir)
	}}
	c := brokerclient.New(b.url, b.token, nil)
	if _, err := c.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-benchgateway"}); err != nil {
		b.stop()
		return nil, err
	}
	if _, err := c.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-proj-benchgateway"}); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// proc is one proxy process under test.
type proc struct {
	name       string
	pid        int
	url, token string
	// startToFirst is the time from exec to the first 200 completion.
	startToFirst time.Duration
	stop         func()
}

// startGateway runs a real bin/gateway process with a throwaway HOME,
// following the broker, with the anthropic and openai base URLs pointed at
// the fake.
func startGateway(bin string, b *runningBroker, upstream string) (*proc, error) {
	return startGatewayAt(bin, b.url, b.token, upstream, "", nil)
}

// startGatewayAt is startGateway with the broker at brokerURL, listening on
// bind ("" = a free 127.0.0.1 port), its command run after prefix (e.g.
// ip netns exec <ns>).
func startGatewayAt(bin, brokerURL, brokerToken, upstream, bind string, prefix []string) (*proc, error) {
	home, err := os.MkdirTemp("", "benchgateway-gw-")
	if err != nil {
		return nil, err
	}
	token := fmt.Sprintf("benchgateway-%d", time.Now().UnixNano())
	if err := os.MkdirAll(filepath.Join(home, ".omp"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".omp", "auth-gateway.token"), []byte(token+"\n"), 0o600); err != nil {
		return nil, err
	}
	env := append(benchproc.CleanEnv(), "HOME="+home, "OMP_AUTH_BROKER_URL="+brokerURL, "OMP_AUTH_BROKER_TOKEN="+brokerToken,
		"OMP_PROVIDER_ANTHROPIC_BASE_URL="+upstream, "OMP_PROVIDER_OPENAI_BASE_URL="+upstream+"/v1")
	p, err := startProcAt("gateway", home, bin, nil, env, token, chatSmall, bind, prefix)
	if err != nil {
		os.RemoveAll(home)
	}
	return p, err
}

// startBare runs this program as the bare reverse proxy in front of the
// fake.
func startBare(upstream string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "benchgateway-bare-")
	if err != nil {
		return nil, err
	}
	p, err := startProc("bare", home, self, []string{"-serve-bare", upstream}, benchproc.CleanEnv(), "", anthropicSmall)
	if err != nil {
		os.RemoveAll(home)
	}
	return p, err
}

func startProc(name, home, bin string, args, env []string, token string, first request) (*proc, error) {
	return startProcAt(name, home, bin, args, env, token, first, "", nil)
}

// startProcAt is startProc listening on addr ("" = a free 127.0.0.1
// port), the command run after prefix.
func startProcAt(name, home, bin string, args, env []string, token string, first request, addr string, prefix []string) (*proc, error) {
	if addr == "" {
		port, err := benchproc.FreePort()
		if err != nil {
			return nil, err
		}
		addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	logf, err := os.Create(filepath.Join(home, name+".log"))
	if err != nil {
		return nil, err
	}
	argv := append(append(slices.Clone(prefix), bin), append(args, "--bind", addr)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = home, env, logf, logf
	p := &proc{name: name, url: "http://" + addr, token: token}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p.pid = cmd.Process.Pid
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		os.RemoveAll(home)
	}
	// Start → first completion: retry the first request until it is
	// answered 200 (connection refused is immediate while it starts).
	deadline := start.Add(30 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(logf.Name())
			p.stop()
			return nil, fmt.Errorf("%s exited at startup:\n%s", name, log)
		default:
		}
		if status, err := once(p, first); err == nil && status == 200 {
			p.startToFirst = time.Since(start)
			return p, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			p.stop()
			return nil, fmt.Errorf("%s gave no completion within 30s:\n%s", name, log)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func once(p *proc, r request) (int, error) {
	resp, err := send(context.Background(), p.url, p.token, r)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// serveBare is the bare reverse proxy: httputil.ReverseProxy with
// FlushInterval -1 and full duplex enabled per request.
func serveBare(upstream string, args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	bind := fs.String("bind", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = u.Host },
		FlushInterval: -1,
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", *bind)
	if err != nil {
		return err
	}
	err = (&http.Server{Handler: h}).Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// rssKiB is VmRSS of pid from /proc/<pid>/status.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
