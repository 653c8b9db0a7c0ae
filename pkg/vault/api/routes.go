package api

import "strconv"

// Route paths. The credential routes add the credential id and an action
// to PathCredential (CredentialPath).
const (
	PathHealthz        = "/v1/healthz"
	PathSnapshot       = "/v1/snapshot"
	PathSnapshotStream = "/v1/snapshot/stream"
	PathUsage          = "/v1/usage"
	PathUsageHistory   = "/v1/usage/history"
	PathUsageStale     = "/v1/usage/stale"
	PathUsageObserved  = "/v1/usage/observed"
	PathUsageClients   = "/v1/usage/clients"
	PathDisabled       = "/v1/credentials/disabled"
	PathCredential     = "/v1/credential" // POST uploads a credential
	PathMetrics        = "/metrics"
	PathUsagePage      = "/usage"
)

// Actions on one credential: POST (DELETE for ActionBlocks)
// /v1/credential/<id>/<action>.
const (
	ActionRefresh = "refresh"
	ActionDisable = "disable"
	ActionBlock   = "block"
	ActionBlocks  = "blocks"
)

// CredentialPath is the path of action on credential id.
func CredentialPath(id int64, action string) string {
	return PathCredential + "/" + strconv.FormatInt(id, 10) + "/" + action
}

// CapabilitiesHeader is the request header of 18.1.21 clients on snapshot
// and stream requests. Its presence, whatever its value, is
// the gate: only then do snapshots carry the 18.1.21 extension fields;
// without it they keep the strict 15.x shape.
const CapabilitiesHeader = "OMP-Auth-Broker-Capabilities"

// CodexMeterBlockScopes is the capability token of readers that take the
// Codex meter block scopes ("chat", "spark") as they are.
const CodexMeterBlockScopes = "codex-meter-block-scopes"

// ObservedCredentialIDs is the capability token of Go clients that name
// the serving credential in observed usage (credentialId on entries) and
// read per-account rows from GET /v1/usage/clients. A client lists it in
// the capabilities header of snapshot and stream requests; a Go broker
// then answers with the header OMP-Auth-Broker-Capabilities:
// observed-credential-id, and only after seeing that answer does a client
// send credentialId (a reference broker sends no such header). On GET
// /v1/usage/clients the token asks for per-account rows; without it the
// answer keeps the reference shape.
const ObservedCredentialIDs = "observed-credential-id"
