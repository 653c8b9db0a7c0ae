package oauth

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// identityFunc derives identity fields from a token reply.
type identityFunc func(tok *oauth2.Token) (accountID, email string)

// Refresh runs the refresh-token grant for cred at provider's token endpoint
// through hc (nil → http.DefaultClient) and returns the new credential:
// the new access token, the rotated refresh token (the old one when the
// server returns none), the new expiry, identity fields from the reply with
// the previous values as fallback, and every other field of cred unchanged.
//
// MCP rows (IsMCP) refresh at the token URL they carry.
//
// The request is bounded by ctx only; callers add their own timeout.
// Failures are *RefreshError values (wrapping *oauth2.RetrieveError or the
// transport error); Classify tells definitive from transient ones. No error
// text contains a token.
func (r *Registry) Refresh(ctx context.Context, provider string, cred vault.Credential, hc *http.Client) (vault.Credential, error) {
	if IsMCP(provider) {
		return r.refreshMCP(ctx, provider, cred, hc)
	}
	p, ok := r.byID[provider]
	if !ok {
		unknown := &Provider{ID: provider, ErrorLabel: provider}
		return vault.Credential{}, unknown.newError(fmt.Errorf("unknown OAuth provider: %s", provider), NewRedactor(SecretsOf(cred)...))
	}
	red := NewRedactor(append(SecretsOf(cred), p.Config.ClientSecret)...)
	if !cred.IsOAuth() {
		return vault.Credential{}, p.newError(fmt.Errorf("credential is not OAuth (type=%s)", cred.Type), red)
	}
	if cred.Refresh == "" || cred.Refresh == vault.RemoteRefreshSentinel {
		return vault.Credential{}, p.newError(fmt.Errorf("%s credentials are missing a refresh token; sign in again", p.ID), red)
	}
	if p.RequireProjectID && cred.ProjectID == "" {
		// Reference wording (refresh "require" rule).
		return vault.Credential{}, p.newError(fmt.Errorf("%s credentials are missing projectId; sign in again", p.ID), red)
	}

	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.client(hc, p.RefreshHeaders))
	// An expired seed token makes the TokenSource refresh immediately.
	seed := &oauth2.Token{RefreshToken: cred.Refresh, Expiry: time.Unix(1, 0)}
	tok, err := p.Config.TokenSource(ctx, seed).Token()
	if err != nil {
		return vault.Credential{}, p.newError(err, red)
	}
	out, err := r.credentialFrom(p, tok, cred)
	if err != nil {
		return vault.Credential{}, p.newError(err, red)
	}
	return out, nil
}

// client returns a copy of hc for token requests: it never follows a
// redirect (a token request carries the refresh token, the authorization
// code and the client secret, which must reach no other URL than the
// configured token endpoint), and providers whose token endpoint wants JSON
// get a transport that rewrites oauth2's form request. hc itself is not
// changed.
func (p *Provider) client(hc *http.Client, headers map[string]string) *http.Client {
	c := noRedirects(hc)
	if p.JSONBody || len(headers) > 0 {
		c.Transport = &tokenTransport{base: c.Transport, json: p.JSONBody, headers: headers}
	}
	return c
}

// noRedirects returns a copy of hc (nil: http.DefaultClient) that answers
// a redirect with the redirect response itself instead of following it.
func noRedirects(hc *http.Client) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// credentialFrom maps a token reply onto a credential. prev supplies every
// field the reply does not (zero Credential for a fresh login).
func (r *Registry) credentialFrom(p *Provider, tok *oauth2.Token, prev vault.Credential) (vault.Credential, error) {
	secs, ok := number(tok.Extra("expires_in"))
	if !ok {
		return vault.Credential{}, fmt.Errorf("%s token response missing expires_in", p.ID)
	}
	base := r.now().UnixMilli()
	if p.ExpiryFromCreatedAt {
		if created, ok := number(tok.Extra("created_at")); ok {
			base = int64(created * 1000)
		}
	}
	out := prev
	out.Type = vault.TypeOAuth
	out.Access = tok.AccessToken
	if tok.RefreshToken != "" {
		out.Refresh = tok.RefreshToken
	}
	out.Expires = base + int64(secs*1000) - p.ExpirySkew.Milliseconds()
	if p.identity != nil {
		acct, email := p.identity(tok)
		if acct != "" {
			out.AccountID = acct
		}
		if email != "" {
			out.Email = email
		}
	}
	return out, nil
}

// number reads a finite JSON number (or a numeric form/string value).
func number(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int64:
		f = float64(n)
	case int:
		f = float64(n)
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(n), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
		return 0, false
	}
	return f, true
}

// anthropicIdentity reads account.uuid and account.email_address.
func anthropicIdentity(tok *oauth2.Token) (string, string) {
	acct, _ := tok.Extra("account").(map[string]any)
	id, _ := acct["uuid"].(string)
	email, _ := acct["email_address"].(string)
	return id, email
}

// codexIdentity reads the ChatGPT account id and email from the access
// token's claims, then from the id_token's (reference getTokenProfile).
func codexIdentity(tok *oauth2.Token) (string, string) {
	const authClaim, profileClaim = provider.OpenAIAuthClaim, provider.OpenAIProfileClaim
	idToken, _ := tok.Extra("id_token").(string)
	var acct, email string
	for _, t := range []string{tok.AccessToken, idToken} {
		claims := vault.JWTClaims(t)
		if claims == nil {
			continue
		}
		if auth, ok := claims[authClaim].(map[string]any); ok && acct == "" {
			acct, _ = auth["chatgpt_account_id"].(string)
		}
		if prof, ok := claims[profileClaim].(map[string]any); ok && email == "" {
			if e, ok := prof["email"].(string); ok {
				email = strings.ToLower(strings.TrimSpace(e))
			}
		}
	}
	return acct, email
}
