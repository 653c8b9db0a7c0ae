package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/pkg/vault"
)

// NewVerifier returns a PKCE code verifier: 96 random bytes, base64url
// without padding (128 characters), as the reference generates.
func NewVerifier() string {
	b := make([]byte, 96)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Challenge returns the S256 PKCE challenge of verifier.
func Challenge(verifier string) string { return oauth2.S256ChallengeFromVerifier(verifier) }

// NewState returns a random OAuth state: 16 random bytes as lowercase hex.
func NewState() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AuthCodeURL builds the provider's authorization URL for state. verifier is
// the PKCE verifier ("" for providers without PKCE); redirectURL "" means
// the provider's default (its callback on the loopback host).
func (p Provider) AuthCodeURL(state, verifier, redirectURL string) string {
	conf := p.Config
	if redirectURL != "" {
		conf.RedirectURL = redirectURL
	}
	var opts []oauth2.AuthCodeOption
	if p.PKCE && verifier != "" {
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	for k, v := range p.AuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return conf.AuthCodeURL(state, opts...)
}

// ErrStateMismatch is returned by Exchange when the pasted code carries an
// OAuth state other than the one generated for this login: the code belongs
// to another authorization (a stale tab, or someone else's link), and
// exchanging it could log the user in to an account they did not choose.
var ErrStateMismatch = errors.New("OAuth state mismatch: the pasted code is not from this login attempt; start the login again")

// ParsePaste splits what a user pasted at the end of a login into the
// authorization code and the state it carries: a redirect URL
// (…/callback?code=C&state=S), a bare query string (code=C&state=S), "C#S"
// as some providers display it, or a bare code (state ""). Surrounding
// spaces are ignored.
func ParsePaste(input string) (code, state string) {
	input = strings.TrimSpace(input)
	if u, err := url.Parse(input); err == nil && u.Scheme != "" && u.Host != "" {
		q := u.Query()
		code, state = q.Get("code"), q.Get("state")
		if code == "" && u.Fragment != "" { // implicit-style fragment
			if fq, err := url.ParseQuery(u.Fragment); err == nil {
				code, state = fq.Get("code"), fq.Get("state")
			}
		}
		return code, state
	}
	if strings.Contains(input, "code=") {
		if q, err := url.ParseQuery(strings.TrimPrefix(input, "?")); err == nil && q.Has("code") {
			return q.Get("code"), q.Get("state")
		}
	}
	if i := strings.IndexByte(input, '#'); i >= 0 {
		return input[:i], input[i+1:]
	}
	return input, ""
}

// Exchange trades an authorization code for a credential (login). code is
// what the user pasted or the callback received (see ParsePaste); state is
// the one generated for this login. A state carried by the pasted input
// must equal it, else Exchange fails with ErrStateMismatch before any token
// request; with state "" the pasted one is used as is. redirectURL "" means
// the provider's default. Identity fields come from the token reply where
// the provider carries them; provider-specific post-login steps (Google
// project discovery) are not part of Exchange.
func (r *Registry) Exchange(ctx context.Context, provider, code, state, verifier, redirectURL string, hc *http.Client) (vault.Credential, error) {
	cred, _, err := r.exchange(ctx, provider, code, state, verifier, redirectURL, hc)
	return cred, err
}

// exchange is Exchange that also returns the raw token reply, from which the
// login follow-ups read provider-specific fields (Anthropic's organization).
func (r *Registry) exchange(ctx context.Context, provider, code, state, verifier, redirectURL string, hc *http.Client) (vault.Credential, *oauth2.Token, error) {
	p, ok := r.byID[provider]
	if !ok {
		//lint:ignore ST1005 the reference error text, shown to users as is
		return vault.Credential{}, nil, fmt.Errorf("Unknown OAuth provider '%s'", provider)
	}
	code, pasted := ParsePaste(code)
	if pasted != "" {
		if state != "" && pasted != state {
			return vault.Credential{}, nil, fmt.Errorf("%s: %w", provider, ErrStateMismatch)
		}
		state = pasted
	}
	if code == "" {
		return vault.Credential{}, nil, fmt.Errorf("%s: empty authorization code", provider)
	}
	conf := p.Config
	if redirectURL != "" {
		conf.RedirectURL = redirectURL
	}
	var opts []oauth2.AuthCodeOption
	if p.PKCE && verifier != "" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	if p.ExchangeState && state != "" {
		opts = append(opts, oauth2.SetAuthURLParam("state", state))
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.client(hc, nil))
	red := NewRedactor(code, verifier, conf.ClientSecret)
	tok, err := conf.Exchange(ctx, code, opts...)
	if err != nil {
		return vault.Credential{}, nil, loginError(p, err, red)
	}
	red = NewRedactor(code, verifier, conf.ClientSecret, tok.AccessToken, tok.RefreshToken)
	cred, err := r.credentialFrom(p, tok, vault.Credential{Type: vault.TypeOAuth})
	if err != nil {
		return vault.Credential{}, nil, loginError(p, err, red)
	}
	if cred.Refresh == "" {
		return vault.Credential{}, nil, fmt.Errorf("%s: token response has no refresh token", provider)
	}
	return cred, tok, nil
}

// loginError words an exchange failure like the reference ("Token exchange
// failed: <status> <error>") while keeping the cause for errors.As; red
// holds the secrets the exchange carried (code, verifier, client secret).
func loginError(p *Provider, err error, red *Redactor) error {
	return &exchangeError{msg: "Token exchange failed: " + p.newError(err, red).detail, err: err}
}

type exchangeError struct {
	msg string
	err error
}

func (e *exchangeError) Error() string { return e.msg }
func (e *exchangeError) Unwrap() error { return e.err }
