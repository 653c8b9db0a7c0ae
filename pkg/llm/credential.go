package llm

import "log/slog"

// CredentialKind says how a Credential authenticates.
type CredentialKind uint8

// Credential kinds.
const (
	// CredentialNone sends no authentication (keyless local endpoints).
	CredentialNone CredentialKind = iota
	// CredentialAPIKey is a provider API key.
	CredentialAPIKey
	// CredentialOAuth is an OAuth access token.
	CredentialOAuth
)

// Credential is the secret handed to a Provider by the caller (the gateway
// resolves it from the vault; pkg/llm never imports the vault). String,
// GoString and LogValue redact the secret.
type Credential struct {
	Kind CredentialKind
	// Secret is the API key or the OAuth access token.
	Secret string
	// AccountID is the ChatGPT account id (Codex) or similar account key.
	AccountID string
	// ProjectID is the Google Cloud project (Gemini CLI, Antigravity).
	ProjectID string
	// EnterpriseURL is an enterprise endpoint bound to the credential.
	EnterpriseURL string
}

// APIKey returns an API-key credential.
func APIKey(key string) Credential { return Credential{Kind: CredentialAPIKey, Secret: key} }

// OAuthToken returns an OAuth access-token credential.
func OAuthToken(access string) Credential { return Credential{Kind: CredentialOAuth, Secret: access} }

// String describes c without its secret.
func (c Credential) String() string {
	switch c.Kind {
	case CredentialAPIKey:
		return "llm.Credential{api key, redacted}"
	case CredentialOAuth:
		return "llm.Credential{oauth, redacted}"
	}
	return "llm.Credential{none}"
}

// GoString describes c without its secret.
func (c Credential) GoString() string { return c.String() }

// LogValue describes c without its secret.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }
