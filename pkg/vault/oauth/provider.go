// Package oauth holds the per-provider OAuth knowledge of the broker: the
// built-in provider registry (client ids, endpoints, scopes, callback ports),
// refresh-token grants and authorization-code helpers built on
// golang.org/x/oauth2, and the classification of refresh failures into
// definitive (disable the credential) and transient (retry on the next sweep).
//
// Facts (endpoints, public client ids, header values, expiry arithmetic) come
// from the reference implementation.
// Every upstream URL can be overridden (NewRegistry) so tests and
// self-hosted instances can point elsewhere.
package oauth

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/internal/provider"
)

// Override kinds passed to the resolver given to NewRegistry.
const (
	KindTokenURL     = "tokenUrl"
	KindAuthorizeURL = "authorizeUrl"
	KindClientID     = "clientId"
	// KindBaseURL is the API root a login follow-up calls: Cloud Code Assist
	// for Google project discovery, api.anthropic.com for the bootstrap
	// identity fallback (the same override the gateway uses for requests).
	KindBaseURL = "baseUrl"
	// KindUserinfoURL is the Google userinfo endpoint a login reads the
	// account email from.
	KindUserinfoURL = "userinfoUrl"
)

// Provider describes one OAuth provider the broker can log in to and refresh.
// Registry.Get returns copies: changing one does not change the registry.
type Provider struct {
	ID   string // registry id, e.g. "anthropic"
	Name string // display name

	// Login callback: the local listener port and path and
	// the host name advertised in the redirect URI.
	CallbackPort int
	CallbackPath string
	CallbackHost string

	// Config carries the client id, the client secret (only public installed-
	// app secrets, Google), scopes, endpoints and the default redirect URL.
	// Endpoint.AuthStyle is always AuthStyleInParams: the reference sends the
	// client id in the body, and oauth2's auto-detection would retry a failed
	// request with another style — a second use of a rotating refresh token.
	Config oauth2.Config

	// Instructions is the line printed under the authorization URL.
	Instructions string

	PKCE       bool              // the authorize request carries an S256 challenge
	AuthParams map[string]string // extra authorize-URL parameters

	// JSONBody: the token endpoint takes a JSON object instead of a form.
	JSONBody bool
	// ExchangeState: the code exchange also sends the OAuth state (Anthropic).
	ExchangeState bool
	// RefreshHeaders are extra headers sent on refresh-token requests only.
	RefreshHeaders map[string]string

	// ExpirySkew is subtracted from the provider's expires_in when the new
	// expiry is computed (the reference stores a pessimistic expiry).
	ExpirySkew time.Duration
	// ExpiryFromCreatedAt: expires_in counts from the reply's created_at
	// (epoch seconds) instead of from now (GitLab).
	ExpiryFromCreatedAt bool
	// RequireProjectID: refreshing a credential without projectId fails with
	// "<id> credentials are missing projectId; sign in again" (Google).
	RequireProjectID bool

	// ErrorLabel starts every refresh error text: "<label> token refresh failed: …".
	ErrorLabel string

	identity identityFunc // derives accountId/email from a token reply; may be nil
}

// RedirectURL is the redirect URI the provider's login flow advertises.
func (p Provider) RedirectURL() string { return p.Config.RedirectURL }

// Registry is the set of OAuth providers. It is safe for concurrent use;
// its contents are fixed at construction.
type Registry struct {
	// Now is the clock used for new expiries; nil means time.Now.
	Now func() time.Time

	byID  map[string]*Provider
	order []string
	urls  func(provider, kind string) string // never nil
}

// NewRegistry returns the built-in providers (openai-codex, anthropic,
// google-antigravity, google-gemini-cli, gitlab-duo, stencil, in the
// reference's list order).
// overrides, when not nil, is asked once per provider and kind (KindTokenURL,
// KindAuthorizeURL, KindClientID; KindBaseURL and KindUserinfoURL when a
// login follow-up runs) and returns a replacement value or "" to
// keep the built-in one; this is how OMP_PROVIDER_<ID>_TOKEN_URL and
// config.yml providers.<id>.tokenUrl reach the registry.
func NewRegistry(overrides func(provider, kind string) string) *Registry {
	if overrides == nil {
		overrides = func(string, string) string { return "" }
	}
	r := &Registry{byID: map[string]*Provider{}, urls: overrides}
	for _, p := range builtins() {
		if v := overrides(p.ID, KindTokenURL); v != "" {
			p.Config.Endpoint.TokenURL = v
		}
		if v := overrides(p.ID, KindAuthorizeURL); v != "" {
			p.Config.Endpoint.AuthURL = v
		}
		if v := overrides(p.ID, KindClientID); v != "" {
			p.Config.ClientID = v
		}
		r.byID[p.ID] = p
		r.order = append(r.order, p.ID)
	}
	return r
}

// Get returns a copy of the provider with id.
func (r *Registry) Get(id string) (Provider, bool) {
	p, ok := r.byID[id]
	if !ok {
		return Provider{}, false
	}
	c := *p
	c.Config.Scopes = slices.Clone(p.Config.Scopes)
	c.AuthParams = maps.Clone(p.AuthParams)
	c.RefreshHeaders = maps.Clone(p.RefreshHeaders)
	return c, true
}

// IDs returns the provider ids in registration order.
func (r *Registry) IDs() []string { return slices.Clone(r.order) }

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func loopback(host string, port int, path string) string {
	return "http://" + host + ":" + strconv.Itoa(port) + path
}

// builtins returns the registry's providers; identities (client ids,
// endpoints, scopes, refresh headers) come from internal/provider.
func builtins() []*Provider {
	googleParams := map[string]string{"access_type": "offline", "prompt": "consent"}
	return []*Provider{
		{
			ID: "openai-codex", Name: "ChatGPT Plus/Pro (Codex Subscription)",
			CallbackPort: 1455, CallbackPath: "/auth/callback", CallbackHost: "localhost",
			Config: oauth2.Config{
				ClientID:    provider.CodexClientID,
				Scopes:      provider.CodexScopes(),
				RedirectURL: "http://localhost:1455/auth/callback", // the only URI OpenAI allowlists
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.CodexAuthorizeURL,
					TokenURL:  provider.CodexTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions: "A browser window should open. Complete login to finish.",
			PKCE:         true,
			AuthParams:   map[string]string{"id_token_add_organizations": "true", "codex_cli_simplified_flow": "true", "originator": provider.CodexOriginator},
			ErrorLabel:   "OpenAI Codex",
			identity:     codexIdentity,
		},
		{
			ID: "anthropic", Name: "Anthropic (Claude Pro/Max)",
			CallbackPort: 54545, CallbackPath: "/callback", CallbackHost: "localhost",
			Config: oauth2.Config{
				ClientID:    provider.AnthropicClientID,
				Scopes:      provider.AnthropicScopes(),
				RedirectURL: loopback("localhost", 54545, "/callback"),
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.AnthropicAuthorizeURL,
					TokenURL:  provider.AnthropicTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions:  "Complete login in your browser. If the browser cannot reach this machine, paste the final redirect URL or authorization code when prompted.",
			PKCE:          true,
			AuthParams:    map[string]string{"code": "true"},
			JSONBody:      true,
			ExchangeState: true,
			RefreshHeaders: map[string]string{
				"anthropic-beta": provider.AnthropicBetasRefresh,
				"User-Agent":     provider.AnthropicRefreshUserAgent,
			},
			ExpirySkew: 5 * time.Minute,
			ErrorLabel: "Anthropic",
			identity:   anthropicIdentity,
		},
		{
			ID: "google-antigravity", Name: "Antigravity (Gemini 3, Claude, GPT-OSS)",
			CallbackPort: 51121, CallbackPath: "/oauth-callback", CallbackHost: "127.0.0.1",
			Config: oauth2.Config{
				ClientID:     provider.AntigravityClientID,
				ClientSecret: provider.AntigravityClientSecret,
				Scopes:       provider.AntigravityScopes(),
				RedirectURL:  loopback("127.0.0.1", 51121, "/oauth-callback"),
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.GoogleAuthorizeURL,
					TokenURL:  provider.GoogleTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions:     "Complete the sign-in in your browser.",
			AuthParams:       googleParams,
			ExpirySkew:       5 * time.Minute,
			RequireProjectID: true,
			ErrorLabel:       "Antigravity",
		},
		{
			ID: "google-gemini-cli", Name: "Google Cloud Code Assist (Gemini CLI)",
			CallbackPort: 8085, CallbackPath: "/oauth2callback", CallbackHost: "127.0.0.1",
			Config: oauth2.Config{
				ClientID:     provider.GeminiCLIClientID,
				ClientSecret: provider.GeminiCLIClientSecret,
				Scopes:       provider.GoogleScopes(),
				RedirectURL:  loopback("127.0.0.1", 8085, "/oauth2callback"),
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.GoogleAuthorizeURL,
					TokenURL:  provider.GoogleTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions:     "Complete the sign-in in your browser.",
			AuthParams:       googleParams,
			ExpirySkew:       5 * time.Minute,
			RequireProjectID: true,
			ErrorLabel:       "Google Cloud",
		},
		{
			ID: "gitlab-duo", Name: "GitLab Duo Non-Agentic", // the 18.1.21 name
			CallbackPort: 8080, CallbackPath: "/callback", CallbackHost: "localhost",
			Config: oauth2.Config{
				ClientID:    provider.GitLabClientID,
				Scopes:      provider.GitLabScopes(),
				RedirectURL: loopback("localhost", 8080, "/callback"),
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.GitLabAuthorizeURL,
					TokenURL:  provider.GitLabTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions:        "Complete GitLab login in browser. If GitLab responds with \"The redirect URI included is not valid\", register your own GitLab OAuth application and set GITLAB_CLIENT_ID + GITLAB_REDIRECT_URI, or use a Personal Access Token via GITLAB_TOKEN.",
			PKCE:                true,
			ExpirySkew:          5 * time.Minute,
			ExpiryFromCreatedAt: true,
			ErrorLabel:          "GitLab Duo",
		},
		{
			ID: "stencil", Name: "Stencil (invite only)",
			CallbackPort: 54547, CallbackPath: "/callback", CallbackHost: "127.0.0.1",
			Config: oauth2.Config{
				ClientID:    provider.StencilClientID,
				Scopes:      provider.StencilScopes(),
				RedirectURL: loopback("127.0.0.1", 54547, "/callback"),
				Endpoint: oauth2.Endpoint{
					AuthURL:   provider.StencilAuthorizeURL,
					TokenURL:  provider.StencilTokenURL,
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
			Instructions: "Sign in to your stencil.so account in the browser. If the browser cannot reach this machine, paste the final redirect URL when prompted.",
			PKCE:         true,
			ExpirySkew:   5 * time.Minute,
			ErrorLabel:   "Stencil",
		},
	}
}
