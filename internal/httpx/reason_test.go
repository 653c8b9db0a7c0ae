package httpx_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/httpx"
)

// TestReasonAndRequestURL: a refused connection and a timeout are named
// plainly, and the URL keeps scheme, host, port and path but never the
// query (a ?key= carries a credential).
func TestReasonAndRequestURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr + "/v1/models?key=secret-123")
	if got := httpx.Reason(err); got != "connection refused" {
		t.Fatalf("reason %q (%v)", got, err)
	}
	if got := httpx.RequestURL(err); got != "http://"+addr+"/v1/models" {
		t.Fatalf("url %q", got)
	}

	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hang.Addr().String()+"/x", nil)
	_, err = http.DefaultClient.Do(req)
	if got := httpx.Reason(err); got != "timeout" {
		t.Fatalf("reason %q (%v)", got, err)
	}
	if u := httpx.RequestURL(err); strings.Contains(u, "secret") || u != "http://"+hang.Addr().String()+"/x" {
		t.Fatalf("url %q", u)
	}
}
