//go:build !unix

package sqlite

import "os"

// holdVault always succeeds where flock(2) does not exist: nothing keeps a
// second broker off the vault or a restore from replacing it under a
// broker, so the operator must run one broker per vault and stop it before
// a restore.
func holdVault(string, string) (*Hold, error) { return &Hold{}, nil }

// unlockFile is never reached: Hold.f is always nil here.
func unlockFile(*os.File) {}

// chownLikeDir does nothing where Unix ownership does not exist.
func chownLikeDir(string) error { return nil }
