package vault_test

import (
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func TestPublicErrorTextDropsTheResolver(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "auth.example", Server: "10.0.0.2:53", IsNotFound: true}
	err := fmt.Errorf("anthropic token refresh failed: %w", &url.Error{Op: "Post", URL: "https://auth.example/token", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}})
	got := vault.PublicErrorText(err)
	want := `anthropic token refresh failed: Post "https://auth.example/token": dial tcp: lookup auth.example: no such host`
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if plain := vault.PublicErrorText(fmt.Errorf("boom")); plain != "boom" {
		t.Fatalf("plain error altered: %q", plain)
	}
}
