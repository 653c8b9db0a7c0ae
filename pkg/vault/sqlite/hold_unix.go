//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// holdVault takes an exclusive, non-blocking advisory lock on abs+".lock"
// (created 0600) for role and writes this process's pid and role into it
// when it can.
// When another process holds the lock it fails with a *HeldError that names
// that holder as its lock file describes it.
func holdVault(abs, role string) (*Hold, error) {
	path := abs + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := readHolder(path)
			return nil, &HeldError{Vault: abs, Lock: path, PID: h.pid, Role: h.role, Addr: h.addr, want: role}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The lock is the claim; what the file says only makes a refused
	// process's message precise, so a full disk does not stop a broker here.
	_ = writeHolder(f, holder{pid: os.Getpid(), role: role})
	return &Hold{f: f, role: role}, nil
}

// unlockFile drops the advisory lock on f.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// chownLikeDir gives path ("" = nothing) the owner of its directory when
// this process is root: a restore run by root into a service's state
// directory must leave files the service can open. Otherwise it does
// nothing (the files are the caller's, as the directory should be).
func chownLikeDir(path string) error {
	if path == "" || os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Lchown(path, int(st.Uid), int(st.Gid))
}
