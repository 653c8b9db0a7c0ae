package sqlite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// One process at a time holds a vault: the broker serving it, or a restore
// replacing it. Two brokers on one vault would both refresh the same
// credential with the same refresh token, and a provider that detects
// refresh-token reuse then revokes the whole token family. The hold is an
// exclusive advisory lock (flock) on <vault>.lock, taken without waiting;
// the kernel drops it when the holder exits, even by SIGKILL, so it never
// goes stale. The holder writes its pid, its role and, once it listens, its
// address into the lock file, and a refused process names them.
//
// Every other vault command (status, list, backup, verify, import, login,
// logout, rekey) opens the vault without the hold: SQLite's own locking
// lets them read and write beside a running broker, which picks up their
// writes by polling the vault's generation.

// Roles of a vault holder, as written in the lock file.
const (
	roleBroker  = "broker"
	roleRestore = "restore"
	roleRefresh = "refresh" // a local command that refreshes credentials (omp usage, the agent)
)

// Hold is this process's exclusive claim on a vault (HoldVault). Release
// it when done; a nil Hold or one from a platform without advisory locks
// does nothing.
type Hold struct {
	f    *os.File // the locked <vault>.lock; nil where locks do not exist
	role string
}

// Announce records addr (the broker's listen URL) in the lock file beside
// this process's pid, so a second broker refused by the hold can name it.
func (h *Hold) Announce(addr string) error {
	if h == nil || h.f == nil {
		return nil
	}
	return writeHolder(h.f, holder{pid: os.Getpid(), role: h.role, addr: addr})
}

// Release empties the lock file and drops the hold. It is safe to call
// twice.
func (h *Hold) Release() {
	if h == nil || h.f == nil {
		return
	}
	_ = h.f.Truncate(0) // a released lock file names no holder
	unlockFile(h.f)
	h.f.Close()
	h.f = nil
}

// holder is what the lock file says about the process holding it.
type holder struct {
	pid  int
	role string
	addr string
}

// writeHolder replaces the content of the lock file f with h, one
// key=value per line.
func writeHolder(f *os.File, h holder) error {
	var b strings.Builder
	fmt.Fprintf(&b, "pid=%d\nrole=%s\n", h.pid, h.role)
	if h.addr != "" {
		fmt.Fprintf(&b, "addr=%s\n", h.addr)
	}
	if _, err := f.WriteAt([]byte(b.String()), 0); err != nil {
		return fmt.Errorf("write lock %s: %w", f.Name(), err)
	}
	if err := f.Truncate(int64(b.Len())); err != nil {
		return fmt.Errorf("write lock %s: %w", f.Name(), err)
	}
	return nil
}

// readHolder reads the lock file at path. A file that is missing, empty or
// not in writeHolder's form (an older omp-go holds the lock without writing
// it) gives the zero holder.
func readHolder(path string) holder {
	f, err := os.Open(path)
	if err != nil {
		return holder{}
	}
	defer f.Close()
	raw, _ := io.ReadAll(io.LimitReader(f, 4096))
	var h holder
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "pid":
			h.pid, _ = strconv.Atoi(v)
		case "role":
			h.role = v
		case "addr":
			h.addr = v
		}
	}
	return h
}

// HeldError is the error of HoldVault and Restore when another process
// holds the vault. It matches ErrVaultInUse with errors.Is.
type HeldError struct {
	Vault string // the vault's absolute path
	Lock  string // the lock file
	PID   int    // the holder's pid; 0 when the lock file does not say
	Role  string // "broker", "restore" or "" when the lock file does not say
	Addr  string // the holding broker's listen URL; "" until it listens
	want  string // the role that was refused
}

// Is reports whether target is ErrVaultInUse.
func (e *HeldError) Is(target error) bool { return target == ErrVaultInUse }

func (e *HeldError) Error() string {
	who := "pid " + strconv.Itoa(e.PID)
	if e.PID == 0 {
		who = "pid unknown, lock " + e.Lock
	}
	switch {
	case e.Role == roleBroker && e.want == roleBroker:
		addr := e.Addr
		if addr == "" {
			addr = "not listening yet"
		}
		return fmt.Sprintf("vault %s is served by another broker (%s, %s); stop it first or point this one at another vault", e.Vault, who, addr)
	case e.Role == roleBroker:
		if e.Addr != "" {
			who += ", " + e.Addr
		}
		return fmt.Sprintf("a broker is serving %s (%s); stop it first (systemctl stop omp-broker, or end `omp auth-broker serve`)", e.Vault, who)
	case e.Role == roleRestore && e.want == roleBroker:
		return fmt.Sprintf("a restore of %s is in progress (%s); start the broker when it has finished", e.Vault, who)
	case e.Role == roleRestore:
		return fmt.Sprintf("another restore of %s is in progress (%s); wait for it to finish", e.Vault, who)
	case e.Role == roleRefresh:
		return fmt.Sprintf("a local omp (omp usage, or the agent without a broker) is refreshing credentials of %s (%s); try again when it has finished", e.Vault, who)
	}
	return fmt.Sprintf("vault %s is held by another process (lock %s held, holder unknown: an older omp-go broker or a restore); stop it first", e.Vault, e.Lock)
}

// HoldVault claims the vault at path for a broker serving it, until Release.
// Only one process holds a vault at a time: HoldVault fails with a
// *HeldError (ErrVaultInUse) naming the holder's pid and address while
// another broker serves the vault or a restore replaces it, and Restore
// fails the same way while a broker holds it. The broker calls Announce
// once it listens.
func HoldVault(path string) (*Hold, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, err
	}
	return holdVault(abs, roleBroker)
}

// HoldVaultToRefresh claims the vault at path for a local command that
// refreshes its credentials without a broker (omp usage on the broker
// host, the agent). It fails like HoldVault while a broker serves the vault: the
// command must then leave refreshing to that broker, since two refreshers
// of one credential would spend the same refresh token twice.
func HoldVaultToRefresh(path string) (*Hold, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return holdVault(abs, roleRefresh)
}
