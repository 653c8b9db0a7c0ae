// Package server is the auth broker's HTTP server: the chi router,
// long-poll, SSE stream and request metrics, over the wire types of
// pkg/vault/api.
//
// # Server
//
// Server serves the broker routes with the exact statuses,
// headers, bodies and error texts of the reference broker. Its generation is
// the vault's (vault.Store.Generation), monotonic across restarts and
// processes. Run is the hub: on every Notify (in-process writers) and every
// PollInterval (writes by other processes) it re-reads
// the generation and, when it moved, builds ONE shared snapshot: every
// credential is redacted and encoded once, and the delta from the previous
// shared snapshot is encoded once as SSE frames. GET /v1/snapshot then only
// formats the per-request numbers (serverNowMs, nextSweepInMs, rotatesInMs),
// and every stream subscriber that is in sync writes the same delta bytes.
//
// # Errors
//
// Handlers return errors; errors.go classifies them for httpx.Adapter with
// the vault code → status table of api.Status. Bodies are always
// {"error": "<string>"}. A *vault.Error with a message is shown as is;
// EUNAVAILABLE (the vault refusing writes: "vault storage is full", "vault
// is read-only") is a 503 with Retry-After:
// api.UnavailableRetryAfter (30 s). Anything else (a non-*vault.Error, or one
// without a message) is unexpected: 500 "internal error (request id <id>)",
// header X-Request-Id: <id>, and the "auth-broker handler crashed" log line
// carries requestId=<id> and the real error text.
//
// # Stream fingerprints
//
// The reference stream compares each credential's [id, provider,
// identityKey, rotatesInMs, credential] with the last one sent, and a pure
// rotatesInMs shift counts as a change. rotatesInMs is relative to
// serverNowMs, so read literally every OAuth entry would be re-sent on every
// change merely because time passed. This package compares the rotation
// TARGET instead — serverNowMs + rotatesInMs, an absolute time computed when
// the shared snapshot is built — so an entry is re-sent when its estimated
// rotation time moves (a new expiry, a different schedule), not when the
// clock advances. A client computing "received + rotatesInMs" sees the same
// deadline either way.
package server
