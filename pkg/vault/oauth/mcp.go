package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/pkg/vault"
)

// MCP OAuth credentials: 18.1.21 clients store
// MCP-server tokens under provider ids "mcp_oauth:profile:<profile>:<server
// URL>", "mcp_oauth:<server URL>" or "mcp_oauth_<random>", with the refresh
// material on the row itself.
const (
	mcpURLPrefix     = "mcp_oauth:"
	mcpProfilePrefix = "mcp_oauth:profile:"
	mcpRandomPrefix  = "mcp_oauth_"
	mcpLabel         = "MCP OAuth"
	// MCP row fields holding the refresh material.
	mcpTokenURL         = "tokenUrl"
	mcpClientID         = "clientId"
	mcpClientSecret     = "clientSecret"
	mcpResource         = "resource"
	mcpAuthorizationURL = "authorizationUrl"
	// mcpMaxBody bounds a token endpoint reply.
	mcpMaxBody = 1 << 20
)

// IsMCP reports whether provider names an MCP OAuth row.
func IsMCP(provider string) bool {
	return strings.HasPrefix(provider, mcpURLPrefix) || strings.HasPrefix(provider, mcpRandomPrefix)
}

// mcpServerURL recovers the server URL from an MCP provider id ("" when the
// id carries none).
func mcpServerURL(provider string) string {
	if rest, ok := strings.CutPrefix(provider, mcpProfilePrefix); ok {
		_, u, found := strings.Cut(rest, ":")
		if !found {
			return ""
		}
		return u
	}
	if rest, ok := strings.CutPrefix(provider, mcpURLPrefix); ok {
		return rest
	}
	return ""
}

// mcpError builds the refresh error of an MCP row. Its text is exactly msg
// (the reference's wording); status and the parsed OAuth error code feed
// Classify like any provider's token endpoint failure.
// The text passes through the redactor of cred's secrets.
func mcpError(provider, msg string, err error, cred vault.Credential) *RefreshError {
	return &RefreshError{Provider: provider, Label: mcpLabel, Err: err, text: Redact(msg, SecretsOf(cred)...)}
}

// refreshMCP runs the generic form refresh_token grant against the row's own
// token URL (http or https only). It keeps every stored field and replaces
// access, refresh (when rotated) and expires (now + expires_in, default
// 3600 s, no skew). The caller bounds ctx (10 s in the broker).
func (r *Registry) refreshMCP(ctx context.Context, provider string, cred vault.Credential, hc *http.Client) (vault.Credential, error) {
	if !cred.IsOAuth() {
		return vault.Credential{}, mcpError(provider, fmt.Sprintf("credential is not OAuth (type=%s)", cred.Type), nil, cred)
	}
	tokenURL := cred.ExtraString(mcpTokenURL)
	if cred.Refresh == "" || cred.Refresh == vault.RemoteRefreshSentinel || tokenURL == "" {
		return vault.Credential{}, mcpError(provider, "MCP OAuth credential is missing refresh material", nil, cred)
	}
	tu, err := url.Parse(tokenURL)
	if err != nil || (tu.Scheme != "http" && tu.Scheme != "https") || tu.Host == "" {
		return vault.Credential{}, mcpError(provider, "MCP OAuth token URL must be an http or https URL", err, cred)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cred.Refresh}}
	if id := strings.TrimSpace(cred.ExtraString(mcpClientID)); id != "" {
		form.Set("client_id", id)
	}
	resource, err := mcpResourceFor(provider, cred, tokenURL)
	if err != nil {
		return vault.Credential{}, mcpError(provider, err.Error(), err, cred)
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	if secret := cred.ExtraString(mcpClientSecret); secret != "" {
		form.Set("client_secret", secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return vault.Credential{}, mcpError(provider, "MCP OAuth refresh failed: invalid token URL", err, cred)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := noRedirects(hc).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return vault.Credential{}, mcpError(provider, "MCP OAuth refresh failed: "+err.Error(), err, cred)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, mcpMaxBody))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return vault.Credential{}, mcpError(provider, "MCP OAuth refresh failed: "+err.Error(), err, cred)
	}
	if resp.StatusCode/100 != 2 {
		re := &oauth2.RetrieveError{Response: resp, Body: body}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil {
			re.ErrorCode = e.Error
		}
		var msg string
		switch echoed := scrubReply(re, NewRedactor(SecretsOf(cred)...)); {
		case isRedirect(resp.StatusCode):
			msg = "MCP OAuth refresh failed: " + redirectDetail(resp)
		case echoed:
			msg = "MCP OAuth refresh failed: " + withheldDetail(resp.StatusCode, re.ErrorCode)
		default:
			msg = fmt.Sprintf("MCP OAuth refresh failed: %d %s", resp.StatusCode, excerpt(string(body)))
		}
		return vault.Credential{}, mcpError(provider, msg, re, cred)
	}
	var tok struct {
		AccessToken  string   `json:"access_token"`
		RefreshToken string   `json:"refresh_token"`
		ExpiresIn    *float64 `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		if err == nil {
			err = errors.New("no access_token")
		}
		return vault.Credential{}, mcpError(provider, "MCP OAuth refresh failed: token response has no access_token", err, cred)
	}
	secs := 3600.0
	if tok.ExpiresIn != nil {
		secs = *tok.ExpiresIn
	}
	out := cred
	out.Access = tok.AccessToken
	if tok.RefreshToken != "" {
		out.Refresh = tok.RefreshToken
	}
	out.Expires = r.now().UnixMilli() + int64(secs*1000)
	return out, nil
}

// mcpResourceFor picks the RFC 8707 resource indicator as the reference
// does: the row's resource, else the server URL recovered from the provider
// id, which is dropped when it is on the origin of authorizationUrl (else
// of tokenUrl). A resource with surrounding whitespace, a non-http(s)
// scheme or a fragment is an error.
func mcpResourceFor(provider string, cred vault.Credential, tokenURL string) (string, error) {
	resource := cred.ExtraString(mcpResource)
	fallback := false
	if resource == "" {
		resource, fallback = mcpServerURL(provider), true
	}
	trimmed := strings.TrimSpace(resource)
	if trimmed == "" {
		return "", nil
	}
	if trimmed != resource {
		return "", errors.New("OAuth resource URI must not include surrounding whitespace")
	}
	u, err := url.Parse(trimmed)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("OAuth resource URI must use http or https")
	}
	if u.Fragment != "" || strings.Contains(trimmed, "#") {
		return "", errors.New("OAuth resource URI must not include a fragment")
	}
	if fallback {
		anchor := cred.ExtraString(mcpAuthorizationURL)
		if anchor == "" {
			anchor = tokenURL
		}
		if a, err := url.Parse(anchor); err == nil && a.Scheme != "" && origin(a) == origin(u) {
			return "", nil
		}
	}
	return trimmed, nil
}

// origin is scheme://host[:port] with the default port elided, as the URL
// standard's origin serialises it.
func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host
}
