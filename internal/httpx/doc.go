// Package httpx holds the HTTP plumbing shared by the broker and the gateway:
// error-returning handlers with one error-code→status table, constant-time
// bearer authentication, size-limited JSON body reading, and Serve with
// graceful shutdown. The SSE writer with per-write deadlines is in
// internal/sse.
//
// It knows the vault error vocabulary (pkg/vault/errors.go) and nothing else
// of the domain.
package httpx
