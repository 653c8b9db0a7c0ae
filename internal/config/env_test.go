package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadEnvLayering(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	dirs, err := ResolveDirs(*NewEnv(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	// The project .env may set provider API keys only (TestLoadEnvProjectKeys).
	writeFile(t, filepath.Join(cwd, ".env"), "OPENAI_API_KEY=cwd\nGROQ_API_KEY=from-cwd\nXAI_API_KEY=cwd\n")
	writeFile(t, filepath.Join(dirs.AgentDir, ".env"), "A=agent\nB=agent\nXAI_API_KEY=agent\nOMP_FOO=omp\nPI_FOO=pi-same-file\n")
	writeFile(t, filepath.Join(dirs.ConfigDir, ".env"), "B=config\nC=config\nPI_BAR=config\n")
	writeFile(t, filepath.Join(home, ".env"), "C=home\nD=home\nOMP_BAR=home\n")

	env := LoadEnv(cwd, dirs, []string{"P=process", "A=process", "OPENAI_API_KEY=process", "GROQ_API_KEY=", "BAD"})
	want := map[string]string{
		"P":              "process",  // process only
		"A":              "process",  // process wins over every file
		"OPENAI_API_KEY": "process",  // process wins over the project .env
		"GROQ_API_KEY":   "from-cwd", // an empty process value counts as unset
		"XAI_API_KEY":    "cwd",      // the project .env before the agent .env
		"B":              "agent",    // agent .env before config .env
		"C":              "config",   // config .env before ~/.env
		"D":              "home",     // ~/.env fills what is left
		"OMP_FOO":        "omp",      //
		"PI_FOO":         "omp",      // OMP_ mirrored to PI_ inside the same file, OMP_ wins
		"PI_BAR":         "config",   // an earlier file's PI_ beats a later file's mirrored OMP_
		"OMP_BAR":        "home",     //
		"BAD":            "",         // malformed process entry dropped
		"MISSING":        "",         //
	}
	for k, v := range want {
		if got := env.Get(k); got != v {
			t.Errorf("Get(%q) = %q, want %q", k, got, v)
		}
	}
	if w := env.Warnings(); w != nil {
		t.Errorf("warnings %q, want none", w)
	}
}

func TestProcessEnvKeepsWindowsDriveEntries(t *testing.T) {
	env := ProcessEnv([]string{"=C:=C:\\x", "K=a=b"})
	if got := env.Get("=C:"); got != `C:\x` {
		t.Errorf("drive entry = %q", got)
	}
	if got := env.Get("K"); got != "a=b" {
		t.Errorf("K = %q", got)
	}
}

func TestNilEnvIsEmpty(t *testing.T) {
	var e *Env
	if e.Get("HOME") != "" || e.Environ() != nil {
		t.Fatal("nil Env not empty")
	}
}

func TestResolveDirs(t *testing.T) {
	home := t.TempDir()
	xdgData := t.TempDir()
	xdgCache := t.TempDir()
	noOmp := t.TempDir()
	if err := os.Mkdir(filepath.Join(xdgData, "omp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(xdgCache, "omp"), 0o700); err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(home, "custom-agent")

	tests := []struct {
		name       string
		env        map[string]string
		goos       string
		wantConfig string
		wantAgent  string
		wantDB     string
		wantCache  string
		wantErr    bool
	}{
		{
			name: "defaults under home", env: map[string]string{"HOME": home}, goos: "linux",
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: home + "/.omp/agent/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "PI_CONFIG_DIR is joined under home even when absolute", env: map[string]string{"HOME": home, "PI_CONFIG_DIR": "/.alt"}, goos: "linux",
			wantConfig: home + "/.alt", wantAgent: home + "/.alt/agent",
			wantDB: home + "/.alt/agent/agent.db", wantCache: home + "/.alt/cache/auth-broker-snapshot.enc",
		},
		{
			name: "existing XDG dirs move db and cache on linux", goos: "linux",
			env:        map[string]string{"HOME": home, "XDG_DATA_HOME": xdgData, "XDG_CACHE_HOME": xdgCache},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: xdgData + "/omp/agent.db", wantCache: xdgCache + "/omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "XDG applies on darwin", goos: "darwin",
			env:        map[string]string{"HOME": home, "XDG_DATA_HOME": xdgData},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: xdgData + "/omp/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "XDG ignored on windows", goos: "windows",
			env:        map[string]string{"HOME": home, "XDG_DATA_HOME": xdgData},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: home + "/.omp/agent/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "XDG ignored when omp dir does not exist", goos: "linux",
			env:        map[string]string{"HOME": home, "XDG_DATA_HOME": noOmp},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: home + "/.omp/agent/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "custom agent dir disables XDG", goos: "linux",
			env:        map[string]string{"HOME": home, "PI_CODING_AGENT_DIR": custom, "XDG_DATA_HOME": xdgData},
			wantConfig: home + "/.omp", wantAgent: custom,
			wantDB: custom + "/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "agent dir equal to the default keeps XDG", goos: "linux",
			env:        map[string]string{"HOME": home, "PI_CODING_AGENT_DIR": home + "/.omp/./agent/", "XDG_DATA_HOME": xdgData},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: xdgData + "/omp/agent.db", wantCache: home + "/.omp/cache/auth-broker-snapshot.enc",
		},
		{
			name: "snapshot cache override wins", goos: "linux",
			env:        map[string]string{"HOME": home, "XDG_CACHE_HOME": xdgCache, "OMP_AUTH_BROKER_SNAPSHOT_CACHE": "/tmp/x.enc"},
			wantConfig: home + "/.omp", wantAgent: home + "/.omp/agent",
			wantDB: home + "/.omp/agent/agent.db", wantCache: "/tmp/x.enc",
		},
		{name: "missing HOME is an error", env: map[string]string{}, goos: "linux", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := goos
			goos = tt.goos
			defer func() { goos = old }()
			env := NewEnv(tt.env)
			d, err := ResolveDirs(*env)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check := func(what, got, want string) {
				if got != want {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("ConfigDir", d.ConfigDir, tt.wantConfig)
			check("AgentDir", d.AgentDir, tt.wantAgent)
			check("AgentDB", d.AgentDB(), tt.wantDB)
			// The sealed vault is always vault.db beside agent.db, never agent.db itself.
			check("VaultDB", d.VaultDB(), strings.TrimSuffix(tt.wantDB, "agent.db")+"vault.db")
			check("SnapshotCachePath", d.SnapshotCachePath(env), tt.wantCache)
			check("BrokerTokenPath", d.BrokerTokenPath(), tt.wantConfig+"/auth-broker.token")
			check("GatewayTokenPath", d.GatewayTokenPath(), tt.wantConfig+"/auth-gateway.token")
			check("VaultKeyPath", d.VaultKeyPath(), tt.wantConfig+"/vault.key")
			check("ConfigYML", d.ConfigYML(), tt.wantAgent+"/config.yml")
		})
	}
}
