package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// Every broker client fails on an unusable OMP_AUTH_BROKER_ACCOUNT_POOL_FILE
// with the exact reference text and exit 1, before any broker request.
func TestAccountPoolFileErrors(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, `{"error":"unexpected"}`, http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	commands := [][]string{{"usage"}, {"usage", "--history"}, {"auth-gateway", "check"}, {"auth-gateway", "serve", "--bind", "127.0.0.1:0"}, {"-p", "hello"}}
	for _, c := range []struct{ name, body, want string }{
		{"not an object", `[]`, "OMP_AUTH_BROKER_ACCOUNT_POOL_FILE must contain a JSON object\n"},
		{"bad item", `{"anthropic":[" email:a@b.c"]}`, "OMP_AUTH_BROKER_ACCOUNT_POOL_FILE entry for anthropic contains an identity key with surrounding whitespace\n"},
	} {
		for _, args := range commands {
			cl := newCLI(t)
			cl.env["OMP_AUTH_BROKER_URL"], cl.env["OMP_AUTH_BROKER_TOKEN"] = srv.URL, "tok"
			path := filepath.Join(cl.cwd, "pool.json")
			writeFile(t, path, c.body)
			cl.env["OMP_AUTH_BROKER_ACCOUNT_POOL_FILE"] = " " + path + " "
			r := cl.run("", args...)
			if r.code != 1 || r.stderr != c.want {
				t.Errorf("%s: omp %v: exit %d, stderr %q; want 1, %q", c.name, args, r.code, r.stderr, c.want)
			}
		}
	}
	cl := newCLI(t)
	cl.env["OMP_AUTH_BROKER_URL"], cl.env["OMP_AUTH_BROKER_TOKEN"] = srv.URL, "tok"
	missing := filepath.Join(cl.cwd, "missing.json")
	cl.env["OMP_AUTH_BROKER_ACCOUNT_POOL_FILE"] = missing
	if r := cl.run("", "usage"); r.code != 1 || r.stderr != "Unable to read OMP_AUTH_BROKER_ACCOUNT_POOL_FILE at "+missing+"\n" {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the broker was called %d times; a bad pool must fail before the first request", n)
	}
}
