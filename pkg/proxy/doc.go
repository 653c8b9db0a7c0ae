// Package proxy is the gateway's HTTP core: it accepts OpenAI
// Chat Completions (POST /v1/chat/completions), Anthropic Messages (POST
// /v1/messages), OpenAI Responses (POST /v1/responses), pi-native (POST
// /v1/pi/stream) and Gemini API (POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent, :countTokens; gemini.go) requests, and answers
// each in its own wire format with a broker-backed credential the client
// never sees. There is no raw
// passthrough: every request is decoded into the canonical llm.Request and
// re-encoded by an upstream llm.Provider.
//
// Request flow, in dispatch.go:
//
//  1. CORS headers on every response; OPTIONS → 204 and GET /healthz
//     without auth; everything else needs the gateway token (Bearer or
//     x-api-key, and on the Gemini routes x-goog-api-key or ?key=,
//     constant time) before routing. Without a token
//     (browser.go), a Host or Origin a web page could send is 403 first,
//     CORS names the Origin instead of "*", and a non-JSON POST is 415.
//  2. Read the body (BodyLimit, else 413) and decode it with the format's
//     codec (400 with the codec's exact text). The bodies held at once are
//     capped (inflight.go): past the cap a request is 503 with Retry-After.
//  3. Resolve the model (models.go): "<provider>/<id>" or a bare id, among
//     the providers that have credentials in the Source now; 404 unknown.
//  4. Passthrough headers and the session id (session.go): the client's
//     cache key, else an id derived from the conversation head.
//  5. Pick a credential (pkg/vault/pick) and open the upstream stream.
//     While nothing has been sent, a failed attempt walks the retry ladder:
//     a 401 re-mints the same account through the Source once, then tries
//     a sibling; a usage limit marks the account and switches; a 403
//     rotates. The last failure is answered in the format's envelope
//     (errors.go), a 429 with the provider's Retry-After.
//  6. Stream: 200 text/event-stream, one flush per canonical event; a
//     failure after that is the format's error event. Non-stream: await
//     the terminal event and answer the format's JSON, or the envelope.
//     The request context is the upstream call's context, so a client that
//     goes away cancels the upstream request.
//
// Operational routes (ops.go, check.go, metrics.go), all behind the token:
//
//   - GET /v1/usage: the Source's usage reports (the remote store's 15 s
//     single-flight cache over the broker), {"generatedAt","reports"}; a
//     failure is an empty list with 200.
//   - GET /v1/credentials/check: CheckCredentials without the completion
//     probe. Credentials are probed one after another: an expired
//     OAuth token is refreshed through the Source, then the provider's
//     usage probe (pkg/vault/usage, Options.Probers) runs from this host,
//     10 s per credential. `omp auth-gateway check --strict` adds the
//     completion probe: "ping" with max 32 tokens to the cheapest
//     servable bundled models of the provider, walking to the next model
//     only on a missing/retired-model failure.
//   - GET /metrics: Prometheus, on the Server's own registry (always on, no
//     option needed): requests by route/format/provider/status, latency,
//     upstream time to first byte, open streams, broker sync lag and mode
//     (Options.Sync), credential blocks in force (pick.Blocks.Counts).
//     Labels carry no token, email or credential id. The reference gateway
//     answers 404 here; this is a Go addition, as the broker's.
//
// The contract is api/gateway.yaml (a test keeps it equal to the router).
//
// The x-omp-* attribution headers feed Options.Observe (observed usage);
// fleet blocks are the picker's (pkg/vault/pick).
package proxy
