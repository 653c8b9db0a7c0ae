package usage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// testNow is the fixed clock of probe tests: 2026-01-02T03:04:05Z.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jwt builds an unsigned three-part token with the given claims.
func jwt(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

// serve starts a fake provider answering every request with h.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch b := v.(type) {
	case string:
		_, _ = w.Write([]byte(b))
	default:
		_ = json.NewEncoder(w).Encode(v)
	}
}

func probeRequest(provider, base string, c vault.Credential) Request {
	return Request{Provider: provider, Credential: c, BaseURL: base, Now: func() time.Time { return testNow },
		Wait: func(context.Context, time.Duration) error { return nil }}
}

// assertJSON compares v's JSON encoding with want (semantic comparison).
func assertJSON(t *testing.T, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		wb, _ := json.MarshalIndent(w, "", " ")
		gb, _ := json.MarshalIndent(g, "", " ")
		t.Errorf("JSON mismatch\n got: %s\nwant: %s", gb, wb)
	}
}

func limitByID(t *testing.T, r *vault.UsageReport, id string) vault.UsageLimit {
	t.Helper()
	if r == nil {
		t.Fatalf("nil report, want limit %s", id)
	}
	for _, l := range r.Limits {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("limit %s not found in %+v", id, r.Limits)
	return vault.UsageLimit{}
}
