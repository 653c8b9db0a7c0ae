// Package vault is the credential domain of the auth broker: the Credential
// and Record types, identity keys, the redacted snapshot model, the Store
// interface that the SQLite adapter implements and the error vocabulary
// shared by every adapter.
//
// The package holds no I/O: it imports neither net/http nor database/sql nor
// any third-party module (see docs/architecture.md, tested by internal/deptest).
package vault
