// Package httpx holds the HTTP plumbing shared by the broker and the gateway:
// error-returning handlers (Adapter), constant-time bearer authentication,
// size-limited JSON body reading, and Serve with graceful shutdown. The SSE
// writer with per-write deadlines is in internal/sse.
//
// It knows no domain: it imports nothing under pkg/ (internal/deptest
// enforces it). A service tells the Adapter what its errors mean through
// Classify (error → Problem: status, client message, Retry-After, or
// "unexpected") and how they look on the wire through Render, so the
// broker's {"error": "…"} (pkg/vault/api owns the vault code → status
// table) and a gateway's per-format envelopes share the same adapter, panic
// recovery and request-id crash logging.
package httpx
