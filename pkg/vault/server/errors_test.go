package server_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

// faultStore is the env's real store with injectable write failures.
type faultStore struct {
	vault.Store
	mu  sync.Mutex
	err error // returned by Upsert, UpsertWalk and Disable when set
}

func (f *faultStore) fail(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

func (f *faultStore) failure() error { f.mu.Lock(); defer f.mu.Unlock(); return f.err }

func (f *faultStore) Upsert(ctx context.Context, provider string, c vault.Credential) ([]vault.Record, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	return f.Store.Upsert(ctx, provider, c)
}

func (f *faultStore) UpsertWalk(ctx context.Context, provider string, c vault.Credential, fn func(*vault.Record)) error {
	if err := f.failure(); err != nil {
		return err
	}
	return f.Store.UpsertWalk(ctx, provider, c, fn)
}

func (f *faultStore) Disable(ctx context.Context, id int64, cause string) error {
	if err := f.failure(); err != nil {
		return err
	}
	return f.Store.Disable(ctx, id, cause)
}

func withFaultStore(f **faultStore) envOpt {
	return func(s *server.Server) { *f = &faultStore{Store: s.Store}; s.Store = *f }
}

// TestStorageErrorsThroughRouter: a write the vault refuses (disk full,
// read-only) is a 503 with Retry-After and the store's message; any other
// unexpected failure is a 500 whose body, X-Request-Id header and crash log
// line carry the same request id, never the error text.
func TestStorageErrorsThroughRouter(t *testing.T) {
	var fs *faultStore
	e := newEnv(t, withFaultStore(&fs))
	a := e.upsert("anthropic", oauthCred("a@b.c", 1000))
	upload := `{"provider":"openai","credential":{"type":"api_key","key":"sk-1"}}`
	writes := []struct{ name, path, body string }{
		{"upload", "/v1/credential", upload},
		{"disable", "/v1/credential/" + itoa(a.ID) + "/disable", ""},
	}
	for _, msg := range []string{"vault storage is full", "vault is read-only"} {
		fs.fail(&vault.Error{Code: vault.EUNAVAILABLE, Message: msg, Err: errors.New("sqlite: SQLITE_FULL secret-path")})
		for _, w := range writes {
			st, hdr, body := e.post(w.path, w.body)
			if st != 503 || hdr.Get("Retry-After") != "30" || body != `{"error":"`+msg+`"}` || hdr.Get("Content-Type") != "application/json" {
				t.Errorf("%s with %q = %d Retry-After=%q %s", w.name, msg, st, hdr.Get("Retry-After"), body)
			}
			if hdr.Get("X-Request-Id") != "" {
				t.Errorf("%s: a 503 is expected, not a crash: X-Request-Id %q", w.name, hdr.Get("X-Request-Id"))
			}
		}
	}
	if strings.Contains(e.logs.String(), "handler crashed") {
		t.Fatalf("a refused write was logged as a crash:\n%s", e.logs.String())
	}

	crash := regexp.MustCompile(`^\{"error":"internal error \(request id ([0-9a-f]{16})\)"\}$`)
	for _, err := range []error{errors.New("disk on fire: secret-xyz"), &vault.Error{Code: vault.EINTERNAL, Err: errors.New("secret-xyz")}} {
		fs.fail(err)
		for _, w := range writes {
			st, hdr, body := e.post(w.path, w.body)
			m := crash.FindStringSubmatch(body)
			if st != 500 || m == nil || hdr.Get("X-Request-Id") != m[1] || hdr.Get("Retry-After") != "" {
				t.Fatalf("%s with %v = %d X-Request-Id=%q %s", w.name, err, st, hdr.Get("X-Request-Id"), body)
			}
			if !strings.Contains(e.logs.String(), `msg="auth-broker handler crashed" method=POST path=`+w.path+` error=`) ||
				!strings.Contains(e.logs.String(), "requestId="+m[1]+"\n") {
				t.Fatalf("crash line for request id %s missing:\n%s", m[1], e.logs.String())
			}
		}
	}
	fs.fail(nil)
	if st, _, body := e.post("/v1/credential", upload); st != 200 {
		t.Fatalf("upload after recovery = %d %s", st, body)
	}
}

// TestClientSeesUnavailable: the client maps the 503 back to EUNAVAILABLE
// with the broker's message.
func TestClientSeesUnavailable(t *testing.T) {
	var fs *faultStore
	e := newEnv(t, withFaultStore(&fs))
	fs.fail(vault.Errorf(vault.EUNAVAILABLE, "vault is read-only"))
	_, err := e.client.Upload(context.Background(), "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-1"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 503 || vault.ErrorCode(err) != vault.EUNAVAILABLE || ce.BrokerMessage() != "vault is read-only" {
		t.Fatalf("Upload = %v", err)
	}
}
