package config

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Env is the merged, read-only environment that LoadEnv builds. A nil *Env
// is an empty environment.
type Env struct {
	vals     map[string]string
	warnings []string // LoadEnv's refused project keys, one line per file
}

// NewEnv returns an Env holding a copy of m (tests and programmatic use).
func NewEnv(m map[string]string) *Env {
	e := &Env{vals: make(map[string]string, len(m))}
	for k, v := range m {
		e.vals[k] = v
	}
	return e
}

// ProcessEnv builds an Env from KEY=VALUE entries such as os.Environ().
// Entries without '=' or whose name or value holds a NUL are dropped.
func ProcessEnv(environ []string) *Env {
	e := &Env{vals: make(map[string]string, len(environ))}
	for _, kv := range environ {
		// Skip index 0 so Windows' "=C:=C:\" entries keep their name.
		i := strings.IndexByte(kv[min(1, len(kv)):], '=')
		if i < 0 {
			continue
		}
		i += min(1, len(kv))
		k, v := kv[:i], kv[i+1:]
		if k == "" || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			continue
		}
		e.vals[k] = v
	}
	return e
}

// Get returns the value of key; "" means unset (an empty value counts as
// unset everywhere in this package).
func (e *Env) Get(key string) string {
	if e == nil {
		return ""
	}
	return e.vals[key]
}

// Environ returns the environment as sorted KEY=VALUE entries, suitable for
// exec.Cmd.Env.
func (e *Env) Environ() []string {
	if e == nil {
		return nil
	}
	out := make([]string, 0, len(e.vals))
	for k, v := range e.vals {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// fill sets every key of src that is unset (absent or empty) in e.
func (e *Env) fill(src map[string]string) {
	for k, v := range src {
		if e.vals[k] == "" {
			e.vals[k] = v
		}
	}
}

// LoadEnv builds the merged environment: the process environment, then
// <cwd>/.env, <agentDir>/.env, <config-dir>/.env and ~/.env, each source
// only filling keys that are still unset. Inside each .env file every
// OMP_* key is mirrored to PI_* (the OMP_ value wins over a PI_ key of the
// same file). Missing or unreadable files are skipped silently, as in the
// reference.
//
// dirs must be resolved from the process environment alone (ResolveDirs of
// ProcessEnv): the merged environment never chooses the directories.
// <cwd>/.env is a project file that the user did not write (a cloned
// repository): it may set only the keys ProjectEnvAllowed accepts, and the
// keys it is refused are reported by Warnings. When cwd is one of the
// user's own directories, its .env is the user's and nothing is refused.
func LoadEnv(cwd string, dirs Dirs, process []string) *Env {
	e := ProcessEnv(process)
	if cwd != "" {
		path := filepath.Join(cwd, ".env")
		vals := readEnvFile(path)
		if !userDir(cwd, dirs) {
			var refused []string
			for k := range vals {
				if !ProjectEnvAllowed(k) {
					refused = append(refused, k)
					delete(vals, k)
				}
			}
			if len(refused) > 0 {
				e.warnings = append(e.warnings, refusedWarning(path, refused, dirs.ConfigDir))
			}
		}
		e.fill(vals)
	}
	for _, dir := range []string{dirs.AgentDir, dirs.ConfigDir, dirs.Home} {
		if dir == "" {
			continue
		}
		e.fill(readEnvFile(filepath.Join(dir, ".env")))
	}
	return e
}

// Warnings returns the warnings of LoadEnv, one line per project .env file
// that held keys it may not set; nil when there were none.
func (e *Env) Warnings() []string {
	if e == nil {
		return nil
	}
	return e.warnings
}

// userDir reports whether dir is the agent dir, the config dir or the home
// directory, whose .env files are the user's own.
func userDir(dir string, dirs Dirs) bool {
	dir = filepath.Clean(dir)
	for _, d := range []string{dirs.AgentDir, dirs.ConfigDir, dirs.Home} {
		if d != "" && filepath.Clean(d) == dir {
			return true
		}
	}
	return false
}

// maxEnvFile bounds how much of a .env file is read.
const maxEnvFile = 1 << 20

func readEnvFile(path string) map[string]string {
	data, err := readLimited(path, maxEnvFile)
	if err != nil {
		return nil
	}
	m := ParseDotenv(data)
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, "OMP_"); ok {
			m["PI_"+rest] = v
		}
	}
	return m
}

// readLimited reads at most limit bytes of a file that is not a directory.
func readLimited(path string, limit int64) ([]byte, error) {
	data, _, err := readLimitedInfo(path, limit)
	return data, err
}

// readLimitedInfo is readLimited that also returns the file's information,
// taken from the open file (the file that was read, even if path is
// replaced meanwhile).
func readLimitedInfo(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: errIsDir}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	return data, st, err
}

var errIsDir = errors.New("is a directory")
