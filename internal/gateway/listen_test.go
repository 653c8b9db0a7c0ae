package gateway_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/internal/gateway"
)

// TestOpenOnBusyPortCreatesNoToken: the gateway binds before it asks the
// broker for a snapshot or creates its bearer token file.
func TestOpenOnBusyPortCreatesNoToken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	bind := busy.Addr().String()
	tok := filepath.Join(t.TempDir(), "auth-gateway.token")
	m := &gateway.Main{Config: gateway.Config{Bind: bind, BrokerURL: "http://127.0.0.1:1", TokenPath: tok, Out: io.Discard}}
	err = m.Open(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("Open on a busy port succeeded")
	}
	if want := "listen " + bind + ": address already in use"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if _, err := os.Stat(tok); !os.IsNotExist(err) {
		t.Fatalf("token file created on a busy port: %v", err)
	}
}
