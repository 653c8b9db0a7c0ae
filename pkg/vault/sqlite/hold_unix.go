//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// holdVault takes a non-blocking advisory lock on abs+".lock" (created
// 0600): shared for a broker serving the vault, exclusive for a restore.
// Unlike lockFile (one rekey per key file), a vault has many holders at
// once and one replacer.
func holdVault(abs string, exclusive bool) (release func(), err error) {
	path := abs + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if exclusive {
				return nil, fmt.Errorf("%w: a broker is serving %s (lock %s held); stop it first (systemctl stop omp-broker, or end `omp auth-broker serve`)", ErrVaultInUse, abs, path)
			}
			return nil, fmt.Errorf("%w: a restore of %s is in progress (lock %s held); start the broker when it has finished", ErrVaultInUse, abs, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

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
