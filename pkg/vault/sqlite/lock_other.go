//go:build !unix

package sqlite

// lockFile is a no-op where flock(2) does not exist; concurrent rekeys then
// rely on Retire's checks alone.
func lockFile(string) (func(), error) { return func() {}, nil }
