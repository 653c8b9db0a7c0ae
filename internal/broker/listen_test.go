package broker_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/internal/broker"
)

// TestOpenOnBusyPortCreatesNothing: the broker binds before it creates the
// vault key, the bearer token or the vault, so a busy port fails with the
// bind value and the bare reason and leaves the config dir empty.
func TestOpenOnBusyPortCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "omp")
	bind := busy.Addr().String()
	m := &broker.Main{Config: broker.Config{
		Bind:      bind,
		DBPath:    filepath.Join(dir, "agent", "vault.db"),
		TokenPath: filepath.Join(dir, "auth-broker.token"),
		KeyPath:   filepath.Join(dir, "vault.key"),
	}}
	err = m.Open(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("Open on a busy port succeeded")
	}
	if want := "listen " + bind + ": address already in use"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("config dir created on a busy port: %v %v", err, entries)
	}
}
