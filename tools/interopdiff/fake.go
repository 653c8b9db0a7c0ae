package interopdiff

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Refresh-token prefixes that choose the fake token endpoint's answer, so
// both brokers get the same upstream behaviour from the same sequence data.
const (
	// RefreshInvalid answers 400 {"error":"invalid_grant"} (a definitive failure).
	RefreshInvalid = "bad-"
	// RefreshSlow holds the request until SlowFor has passed, beyond the
	// brokers' 10 s refresh bound (a transient timeout).
	RefreshSlow = "slow-"
)

// SlowFor is how long a RefreshSlow request is held (the brokers give up
// after 10 s).
const SlowFor = 13 * time.Second

// TokenRequest is what the fake token endpoint recorded of one request,
// without the refresh token's value beyond its prefix-selected mode.
type TokenRequest struct {
	Path      string `json:"path"`
	Grant     string `json:"grant_type,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Resource  string `json:"resource,omitempty"`
	HasSecret bool   `json:"client_secret,omitempty"`
	Refresh   string `json:"refresh_token,omitempty"`
	JSONBody  bool   `json:"json,omitempty"`
}

// TokenServer is a fake OAuth token endpoint on a real loopback listener.
// Any POST with a refresh_token (form or JSON body) is a refresh grant: a
// token starting with RefreshInvalid gets invalid_grant, RefreshSlow is held
// for SlowFor, anything else succeeds and rotates: access "at." + refresh,
// refresh refresh + ".r", expires_in 3600. GETs (the reference's
// Anthropic bootstrap identity probe) get {}. It is also reachable as any
// https host through Proxy, which is how the reference broker, whose token
// URLs are fixed, is pointed at it.
type TokenServer struct {
	URL string // http://127.0.0.1:<port>

	srv    *http.Server
	ln     net.Listener
	proxy  *http.Server
	pln    net.Listener
	tlsCfg *tls.Config
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once

	mu  sync.Mutex
	log []TokenRequest
}

// StartTokenServer starts a fake token endpoint and its intercepting proxy.
func StartTokenServer() (*TokenServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, err
	}
	cert, err := selfSigned()
	if err != nil {
		ln.Close()
		pln.Close()
		return nil, err
	}
	ts := &TokenServer{
		URL: "http://" + ln.Addr().String(), ln: ln, pln: pln,
		tlsCfg: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		conns:  make(chan net.Conn), done: make(chan struct{}),
	}
	ts.srv = &http.Server{Handler: http.HandlerFunc(ts.serveToken), ReadHeaderTimeout: 5 * time.Second}
	ts.proxy = &http.Server{Handler: http.HandlerFunc(ts.serveConnect), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ts.srv.Serve(ln) }()
	go func() { _ = ts.srv.Serve(&chanListener{ts: ts}) }()
	go func() { _ = ts.proxy.Serve(pln) }()
	return ts, nil
}

// ProxyURL is the http:// proxy (HTTPS_PROXY) that terminates TLS for any
// host with a throwaway certificate and serves the fake token endpoint
// there. The client must skip certificate checks
// (NODE_TLS_REJECT_UNAUTHORIZED=0 for the reference).
func (ts *TokenServer) ProxyURL() string { return "http://" + ts.pln.Addr().String() }

// Close stops both listeners and releases held (slow) requests.
func (ts *TokenServer) Close() {
	ts.once.Do(func() { close(ts.done) })
	_ = ts.proxy.Close()
	_ = ts.srv.Close()
}

// Take returns the requests recorded since the last Take and forgets them.
func (ts *TokenServer) Take() []TokenRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := ts.log
	ts.log = nil
	return out
}

func (ts *TokenServer) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost {
		_, _ = io.WriteString(w, "{}")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	fields := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if isJSON {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		for k, v := range m {
			if s, ok := v.(string); ok {
				fields[k] = s
			}
		}
	} else if q, err := url.ParseQuery(string(body)); err == nil {
		for k := range q {
			fields[k] = q.Get(k)
		}
	}
	rt := fields["refresh_token"]
	ts.mu.Lock()
	ts.log = append(ts.log, TokenRequest{Path: r.URL.Path, Grant: fields["grant_type"], ClientID: fields["client_id"],
		Resource: fields["resource"], HasSecret: fields["client_secret"] != "", Refresh: rt, JSONBody: isJSON})
	ts.mu.Unlock()
	switch {
	case strings.HasPrefix(rt, RefreshInvalid):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"refresh token revoked"}`)
		return
	case strings.HasPrefix(rt, RefreshSlow):
		select {
		case <-time.After(SlowFor):
		case <-ts.done:
			return
		case <-r.Context().Done():
			return
		}
	case rt == "":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_request","error_description":"refresh_token missing"}`)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": "at." + rt, "refresh_token": rt + ".r", "expires_in": 3600, "token_type": "Bearer",
	})
}

// serveConnect answers CONNECT by handing the tunnelled connection, wrapped
// in TLS, to the token handler.
func (ts *TokenServer) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	var c net.Conn = conn
	if rw.Reader.Buffered() > 0 {
		c = &bufferedConn{Conn: conn, r: rw.Reader}
	}
	select {
	case ts.conns <- tls.Server(c, ts.tlsCfg):
	case <-ts.done:
		conn.Close()
	}
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener feeds the TLS connections accepted by serveConnect to the
// token server.
type chanListener struct{ ts *TokenServer }

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ts.conns:
		return c, nil
	case <-l.ts.done:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { return nil }
func (l *chanListener) Addr() net.Addr { return l.ts.pln.Addr() }

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "interopdiff fake token endpoint"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames:    []string{"api.anthropic.com", "auth.openai.com", "oauth2.googleapis.com", "gitlab.com", "localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if der == nil {
		return tls.Certificate{}, errors.New("no certificate")
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
