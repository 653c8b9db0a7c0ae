package config

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func brokerFixture(t *testing.T, configYML, tokenFile string) Dirs {
	t.Helper()
	home := t.TempDir()
	d, err := ResolveDirs(*NewEnv(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if configYML != "" {
		writeFile(t, d.ConfigYML(), configYML)
	}
	if tokenFile != "" {
		writeFile(t, d.BrokerTokenPath(), tokenFile)
	}
	return d
}

func TestResolveBroker(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		configYML   string
		tokenFile   string
		wantNil     bool
		wantURL     string
		wantToken   string
		wantSource  string
		wantMissing bool
	}{
		{name: "no URL anywhere means no broker", tokenFile: "filetok", wantNil: true},
		{name: "env URL and env token", env: map[string]string{"OMP_AUTH_BROKER_URL": "https://b/", "OMP_AUTH_BROKER_TOKEN": "envtok"},
			configYML: "auth:\n  broker:\n    token: cfgtok\n", wantURL: "https://b/", wantToken: "envtok", wantSource: TokenFromEnv},
		{name: "config token resolved even with env URL", env: map[string]string{"OMP_AUTH_BROKER_URL": "https://b"},
			configYML: "auth:\n  broker:\n    token: CFG_VAR\n", tokenFile: "filetok",
			wantURL: "https://b", wantToken: "from-var", wantSource: TokenFromConfig},
		{name: "config URL resolved through an env var name", env: map[string]string{"URL_VAR": "https://via-var"},
			configYML: "auth.broker.url: URL_VAR\n", tokenFile: "  filetok\n",
			wantURL: "https://via-var", wantToken: "filetok", wantSource: TokenFromFile},
		{name: "config URL via command", configYML: "auth:\n  broker:\n    url: '!echo https://cmd'\n    token: '!echo cmdtok'\n",
			wantURL: "https://cmd", wantToken: "cmdtok", wantSource: TokenFromConfig},
		{name: "unresolved URL command leaves the broker off", configYML: "auth:\n  broker:\n    url: '!exit 1'\n", tokenFile: "t", wantNil: true},
		{name: "unresolved token command falls through to the file", env: map[string]string{"OMP_AUTH_BROKER_URL": "https://b"},
			configYML: "auth:\n  broker:\n    token: '!exit 1'\n", tokenFile: "filetok",
			wantURL: "https://b", wantToken: "filetok", wantSource: TokenFromFile},
		{name: "blank token file is absent", env: map[string]string{"OMP_AUTH_BROKER_URL": "https://b"}, tokenFile: " \n", wantMissing: true, wantURL: "https://b"},
		{name: "missing token is an error naming the resolved config URL", configYML: "auth.broker.url: https://cfg\n",
			wantMissing: true, wantURL: "https://cfg"},
		{name: "empty env values count as unset", env: map[string]string{"OMP_AUTH_BROKER_URL": "", "OMP_AUTH_BROKER_TOKEN": ""},
			configYML: "auth.broker.url: https://cfg\n", tokenFile: "filetok", wantURL: "https://cfg", wantToken: "filetok", wantSource: TokenFromFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := brokerFixture(t, tt.configYML, tt.tokenFile)
			envMap := map[string]string{"CFG_VAR": "from-var"}
			for k, v := range tt.env {
				envMap[k] = v
			}
			env := NewEnv(envMap)
			r := &Resolver{Env: env, Shell: "/bin/sh"}
			b, err := ResolveBroker(context.Background(), env, d, nil, r)
			if tt.wantMissing {
				var me *MissingTokenError
				if !errors.As(err, &me) {
					t.Fatalf("err = %v, want *MissingTokenError", err)
				}
				want := "OMP_AUTH_BROKER_URL is set (" + tt.wantURL + ") but no bearer token is available. Set OMP_AUTH_BROKER_TOKEN, the `auth.broker.token` config entry, or place one at " + d.BrokerTokenPath() + "."
				if err.Error() != want {
					t.Fatalf("error text\n got %q\nwant %q", err.Error(), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil {
				if b != nil {
					t.Fatalf("got %v, want nil", b)
				}
				return
			}
			if b == nil || b.URL != tt.wantURL || b.Token != tt.wantToken || b.TokenSource != tt.wantSource {
				t.Fatalf("got %+v, want %s %s %s", b, tt.wantURL, tt.wantToken, tt.wantSource)
			}
		})
	}
}

func TestResolveBrokerSkipsConfigWhenEnvComplete(t *testing.T) {
	d := brokerFixture(t, "auth: [invalid\n", "")
	env := NewEnv(map[string]string{"OMP_AUTH_BROKER_URL": "https://b", "OMP_AUTH_BROKER_TOKEN": "t"})
	log, buf := captureLog()
	b, err := ResolveBroker(context.Background(), env, d, nil, &Resolver{Env: env, Logger: log})
	if err != nil || b.Token != "t" {
		t.Fatalf("got %v, %v", b, err)
	}
	if buf.Len() != 0 {
		t.Fatalf("config.yml was read: %s", buf)
	}
}

func TestResolveBrokerUnreadableTokenFileWarns(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs POSIX permissions enforced (not root)")
	}
	d := brokerFixture(t, "", "tok")
	if err := os.Chmod(d.BrokerTokenPath(), 0); err != nil {
		t.Fatal(err)
	}
	env := NewEnv(map[string]string{"OMP_AUTH_BROKER_URL": "https://b"})
	log, buf := captureLog()
	_, err := ResolveBroker(context.Background(), env, d, nil, &Resolver{Env: env, Logger: log})
	var me *MissingTokenError
	if !errors.As(err, &me) || !strings.Contains(buf.String(), "auth-broker token file unreadable") {
		t.Fatalf("err %v, log %q", err, buf)
	}
}

func TestResolveBrokerUnreadableTokenDirWarns(t *testing.T) {
	// A directory in place of the token file is unreadable for root too.
	d := brokerFixture(t, "", "")
	if err := os.MkdirAll(d.BrokerTokenPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	env := NewEnv(map[string]string{"OMP_AUTH_BROKER_URL": "https://b"})
	log, buf := captureLog()
	_, err := ResolveBroker(context.Background(), env, d, nil, &Resolver{Env: env, Logger: log})
	var me *MissingTokenError
	if !errors.As(err, &me) || !strings.Contains(buf.String(), "auth-broker token file unreadable") {
		t.Fatalf("err %v, log %q", err, buf)
	}
}

func TestBrokerStringHidesToken(t *testing.T) {
	b := Broker{URL: "https://b", Token: "s3cret", TokenSource: TokenFromEnv}
	for _, s := range []string{b.String(), b.GoString()} {
		if strings.Contains(s, "s3cret") {
			t.Fatalf("%q leaks the token", s)
		}
	}
}

func TestBrokerCache(t *testing.T) {
	d := brokerFixture(t, "auth.broker.url: https://cfg\n", "")
	env := NewEnv(nil)
	var c BrokerCache
	ctx := context.Background()

	// A failure is not memoised: fixing the token file makes the next call succeed.
	if _, err := c.Resolve(ctx, env, d, nil, nil); err == nil {
		t.Fatal("want missing-token error")
	}
	writeFile(t, d.BrokerTokenPath(), "tok1")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if b, err := c.Resolve(ctx, env, d, nil, nil); err != nil || b.Token != "tok1" {
				t.Errorf("got %v, %v", b, err)
			}
		})
	}
	wg.Wait()
	// Success is memoised: a changed file is not re-read for the same key.
	writeFile(t, d.BrokerTokenPath(), "tok2")
	if b, _ := c.Resolve(ctx, env, d, nil, nil); b.Token != "tok1" {
		t.Fatalf("memo not used: %q", b.Token)
	}
	// A different env key resolves again.
	env2 := NewEnv(map[string]string{"OMP_AUTH_BROKER_TOKEN": "envtok"})
	if b, _ := c.Resolve(ctx, env2, d, nil, nil); b.Token != "envtok" {
		t.Fatalf("key change ignored: %q", b.Token)
	}
}
