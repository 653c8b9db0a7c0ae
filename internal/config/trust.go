package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// A project .env (the .env of the working directory, which a cloned
// repository controls) may set only the provider API-key variables of the
// key table (EnvKeys, plus the Foundry key). Every other key it holds is
// ignored. An allow-list is used rather than a deny-list because the keys
// that matter are open-ended: broker and provider URLs, the config and
// agent directories, tokens, cache and pool paths, shell prefixes, BROWSER,
// HOME, XDG_*, proxies and loader variables handed to !command children.
// A deny-list misses the next such key; the allow-list fails closed. An API
// key from a project can only authenticate the user to the provider's
// default or user-configured endpoint, which the project cannot change.
// Keys refused here are honoured when they come from the process
// environment or from the user's own .env files.
var projectEnvKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	for _, e := range envTable {
		for _, k := range e.vars {
			keys[k] = true
		}
	}
	for _, k := range foundryVars {
		keys[k] = true
	}
	return keys
})

// ProjectEnvAllowed reports whether a project .env may set key.
func ProjectEnvAllowed(key string) bool { return projectEnvKeys()[key] }

// refusedWarning is the warning for keys refused from a project .env file.
func refusedWarning(path string, keys []string, configDir string) string {
	sort.Strings(keys)
	return fmt.Sprintf("omp: ignoring %s in %s: a project .env may set only provider API keys "+
		"(to use these, export them in your shell or put them in %s)",
		strings.Join(keys, ", "), path, filepath.Join(configDir, ".env"))
}

// CheckCommandFile returns nil when "!command" values of the file at path
// may run: the file and its directory belong to the current user and
// neither is writable by group or others. Otherwise the error says why.
// It checks info (the file as it was read) and the directory of path.
// Where file ownership is not available (Windows) it returns nil.
func CheckCommandFile(path string, info fs.FileInfo) error {
	if err := checkOwnedPrivate(path, info); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot check the directory %s: %w", dir, err)
	}
	return checkOwnedPrivate(dir, st)
}

// CommandRefusedError names a !command value that was not run.
type CommandRefusedError struct {
	Path   string // the file holding the value
	Key    string // its key, e.g. auth.broker.token
	Reason error  // why the file is not trusted
}

func (e *CommandRefusedError) Error() string {
	return fmt.Sprintf("refusing to run the !command of %s in %s: %v "+
		"(commands run only from files you own that others cannot write)", e.Key, e.Path, e.Reason)
}
