// Package api is the auth broker's wire protocol, shared by its HTTP
// server (pkg/vault/server) and its Go client (pkg/vault/client): route
// paths, header names and capability tokens, the JSON shapes of requests
// and answers, the vault error code ↔ HTTP status table, and the decoders
// of both directions. It holds no HTTP server or client code.
//
// # Errors
//
// Every error answer has the body {"error": "<text>"} (ErrorBody). Status
// maps a vault error code to its HTTP status and CodeForStatus is its
// inverse, so a client rebuilds a *vault.Error with the code the broker
// had. EUNAVAILABLE (the vault refusing writes: "vault storage is full",
// "vault is read-only") is a 503 sent with Retry-After:
// UnavailableRetryAfter.
//
// # Decoders
//
// Request decoders (DecodeUpload, DecodeDisable, DecodeBlock,
// DecodeClientUsage) are strict: unknown keys and wrong
// kinds are a vault EINVALID error whose text names keys and JSON kinds,
// never values, so it is safe to show to the sender. Answer decoders
// (DecodeSnapshot, DecodeEvent, DecodeHealth, …) are lenient: unknown
// fields are ignored (a newer broker's additions), required fields and
// their types are checked.
package api
