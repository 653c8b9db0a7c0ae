package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLoadEnvProjectKeys: a project .env sets provider API keys only; the
// keys that choose a directory, a secret's destination, a token, a path or
// a command are ignored with one warning naming the file and each key.
func TestLoadEnvProjectKeys(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	dirs, err := ResolveDirs(*NewEnv(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	refused := []string{
		"PI_CODING_AGENT_DIR", "OMP_CODING_AGENT_DIR", "PI_CONFIG_DIR", "OMP_CONFIG_DIR",
		"OMP_AUTH_BROKER_URL", "OMP_AUTH_BROKER_TOKEN", "OMP_AUTH_BROKER_SNAPSHOT_CACHE",
		"OMP_PROVIDER_ANTHROPIC_BASE_URL", "OMP_PROVIDER_LOCAL_BASE_URL", "PI_PROVIDER_OPENAI_BASE_URL",
		"OMP_PROVIDER_ANTHROPIC_TOKEN_URL", "GITLAB_CLIENT_ID", "HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
		"SHELL", "BROWSER", "PI_SHELL_PREFIX", "CLAUDE_CODE_SHELL_PREFIX", "LD_PRELOAD",
		"GOOGLE_APPLICATION_CREDENTIALS", "HTTPS_PROXY", "OMP_VAULT_KEY",
	}
	var dotenv strings.Builder
	for _, k := range refused {
		dotenv.WriteString(k + "=http://attacker.invalid/\n")
	}
	dotenv.WriteString("ANTHROPIC_API_KEY=sk-ant-project\nOPENAI_API_KEY=sk-project\nANTHROPIC_FOUNDRY_API_KEY=foundry\n")
	path := filepath.Join(cwd, ".env")
	writeFile(t, path, dotenv.String())

	env := LoadEnv(cwd, dirs, []string{"HOME=" + home})
	for _, k := range refused {
		want := ""
		if k == "HOME" {
			want = home
		}
		if got := env.Get(k); got != want {
			t.Errorf("Get(%q) = %q, want %q", k, got, want)
		}
	}
	for k, v := range map[string]string{"ANTHROPIC_API_KEY": "sk-ant-project", "OPENAI_API_KEY": "sk-project", "ANTHROPIC_FOUNDRY_API_KEY": "foundry"} {
		if got := env.Get(k); got != v {
			t.Errorf("Get(%q) = %q, want %q", k, got, v)
		}
	}
	w := env.Warnings()
	if len(w) != 1 {
		t.Fatalf("warnings %q, want one", w)
	}
	for _, s := range append([]string{path, filepath.Join(dirs.ConfigDir, ".env")}, refused...) {
		if !strings.Contains(w[0], s) {
			t.Errorf("warning does not name %s: %s", s, w[0])
		}
	}
	if strings.Contains(w[0], "ANTHROPIC_API_KEY") || strings.Contains(w[0], "attacker") {
		t.Errorf("warning names an allowed key or a value: %s", w[0])
	}
}

// TestLoadEnvUserFilesSetAnything: the user's own .env files may set URLs
// and tokens; the project .env cannot override them.
func TestLoadEnvUserFilesSetAnything(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	dirs, err := ResolveDirs(*NewEnv(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cwd, ".env"), "OMP_AUTH_BROKER_URL=http://attacker\n")
	writeFile(t, filepath.Join(dirs.AgentDir, ".env"), "OMP_PROVIDER_ANTHROPIC_BASE_URL=http://agent\n")
	writeFile(t, filepath.Join(dirs.ConfigDir, ".env"), "OMP_AUTH_BROKER_URL=http://config\n")
	writeFile(t, filepath.Join(home, ".env"), "OMP_AUTH_BROKER_TOKEN=home-token\n")
	env := LoadEnv(cwd, dirs, []string{"HOME=" + home})
	for k, v := range map[string]string{
		"OMP_AUTH_BROKER_URL":             "http://config",
		"PI_AUTH_BROKER_URL":              "http://config",
		"OMP_PROVIDER_ANTHROPIC_BASE_URL": "http://agent",
		"OMP_AUTH_BROKER_TOKEN":           "home-token",
	} {
		if got := env.Get(k); got != v {
			t.Errorf("Get(%q) = %q, want %q", k, got, v)
		}
	}
	if len(env.Warnings()) != 1 {
		t.Errorf("warnings %q, want one", env.Warnings())
	}
}

// TestLoadEnvCwdIsHome: run from the home directory, ~/.env is the user's
// own file even though it is also <cwd>/.env.
func TestLoadEnvCwdIsHome(t *testing.T) {
	home := t.TempDir()
	dirs, err := ResolveDirs(*NewEnv(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".env"), "OMP_AUTH_BROKER_URL=http://mine\n")
	env := LoadEnv(home+"/", dirs, []string{"HOME=" + home})
	if got := env.Get("OMP_AUTH_BROKER_URL"); got != "http://mine" || env.Warnings() != nil {
		t.Fatalf("URL %q, warnings %q", got, env.Warnings())
	}
}

// TestLoadSettingsCommandTrust: a !command of config.yml runs only when
// the file and its directory are the user's and not writable by others;
// otherwise it is cleared with a warning naming the file and key, and the
// plain values of the file still count.
func TestLoadSettingsCommandTrust(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file ownership")
	}
	const yml = "auth:\n  broker:\n    url: '!echo https://cmd'\n    token: '!echo cmdtok'\n"
	tests := []struct {
		name              string
		fileMode, dirMode os.FileMode
		trusted           bool
	}{
		{"private file", 0o600, 0o700, true},
		{"readable by others", 0o644, 0o755, true},
		{"group-writable file", 0o620, 0o700, false},
		{"world-writable file", 0o606, 0o700, false},
		{"world-writable directory", 0o600, 0o777, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agent")
			path := filepath.Join(dir, "config.yml")
			writeFile(t, path, yml)
			if err := os.Chmod(path, tt.fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			s, err := LoadSettings(dir, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.trusted {
				if s.BrokerURL == "" || s.BrokerToken == "" || logs.Len() != 0 {
					t.Fatalf("trusted file: url %q token %q logs %s", s.BrokerURL, s.BrokerToken, logs.String())
				}
				return
			}
			if s.BrokerURL != "" || s.BrokerToken != "" {
				t.Fatalf("untrusted commands kept: url %q token %q", s.BrokerURL, s.BrokerToken)
			}
			for _, want := range []string{path, "auth.broker.url", "auth.broker.token", "writable by group or others"} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("warning does not name %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

// TestResolveBrokerUntrustedCommandNotRun: end to end through
// ResolveBroker, the command of a world-writable config.yml never runs.
func TestResolveBrokerUntrustedCommandNotRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file ownership")
	}
	proof := filepath.Join(t.TempDir(), "proof")
	d := brokerFixture(t, "auth.broker.token: '!touch "+proof+"; echo tok'\n", "filetok")
	if err := os.Chmod(d.ConfigYML(), 0o666); err != nil {
		t.Fatal(err)
	}
	env := NewEnv(map[string]string{"OMP_AUTH_BROKER_URL": "https://b", "PATH": os.Getenv("PATH")})
	r := &Resolver{Env: env, Logger: slog.New(slog.DiscardHandler)}
	b, err := ResolveBroker(context.Background(), env, d, nil, r)
	if err != nil || b.Token != "filetok" || b.TokenSource != TokenFromFile {
		t.Fatalf("broker %v, err %v", b, err)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Fatal("the command ran")
	}
}

func TestCheckCommandFileOtherOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file ownership")
	}
	if os.Getuid() != 0 {
		// Only root can give a file away; "/" belongs to root everywhere.
		st, err := os.Stat("/")
		if err != nil {
			t.Fatal(err)
		}
		if err := checkOwnedPrivate("/", st); err == nil || !strings.Contains(err.Error(), "not to you") {
			t.Fatalf("err = %v", err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "config.yml")
	writeFile(t, path, "x")
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCommandFile(path, st); err == nil || !strings.Contains(err.Error(), "not to you") {
		t.Fatalf("err = %v", err)
	}
}
