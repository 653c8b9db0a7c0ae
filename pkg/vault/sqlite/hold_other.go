//go:build !unix

package sqlite

// holdVault is a no-op where flock(2) does not exist: Restore then cannot
// tell a running broker and the operator must stop it first.
func holdVault(string, bool) (func(), error) { return func() {}, nil }

// chownLikeDir does nothing where Unix ownership does not exist.
func chownLikeDir(string) error { return nil }
