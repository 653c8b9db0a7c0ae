package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// DefaultLoginTimeout bounds the wait for the browser callback or a pasted
// code (the reference's callback server gives up after 5 minutes too).
const DefaultLoginTimeout = 5 * time.Minute

// ErrLoginCancelled is returned by Login when its context ends (Ctrl-C)
// before a credential was obtained. The text is the reference's.
var ErrLoginCancelled = errors.New("Login cancelled")

// LoginTimeoutError is returned by Login when neither the callback nor a
// pasted code arrived in time.
type LoginTimeoutError struct{ After time.Duration }

func (e *LoginTimeoutError) Error() string {
	return fmt.Sprintf("Login timed out after %s: no browser callback and no pasted code; run the login again", e.After)
}

// NoInputError is returned by Login when the code must be pasted (no
// browser here, or a redirect that does not reach this machine) and the
// input ended before one was.
type NoInputError struct{ Provider string }

func (e *NoInputError) Error() string {
	return fmt.Sprintf("login %s needs a terminal: stdin ended before an authorization code was pasted and no browser here can reach the callback; "+
		"run `omp auth-broker login %[1]s` in a terminal and paste the redirect URL or code, or run it from your workstation with --via=user@host", e.Provider)
}

// errPasteClosed is waitCode's signal that the paste input ended.
var errPasteClosed = errors.New("paste input closed")

// LoginOptions are the surroundings of one interactive login (Login). Every
// field is optional.
type LoginOptions struct {
	// RedirectURL replaces the provider's redirect URI (a self-registered
	// OAuth application, GITLAB_REDIRECT_URI). A loopback http URI with port
	// 0 listens on a free port and advertises it (tests).
	RedirectURL string
	// HTTPClient carries every request (token endpoint, follow-ups); nil
	// means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds the wait for the callback or a paste (default
	// DefaultLoginTimeout).
	Timeout time.Duration

	// Auth is called once with the URL the user must open and the
	// provider's instructions, before the browser is opened.
	Auth func(authURL, instructions string)
	// Browser opens the URL (best effort); nil means no browser.
	Browser func(authURL string) error
	// Progress receives one-line progress messages.
	Progress func(msg string)
	// Paste delivers what the user pastes (one redirect URL or code per
	// value); nil means the callback is the only way in. A value whose
	// state does not match is rejected through Progress and the wait goes on.
	Paste <-chan string

	// GoogleProject is GOOGLE_CLOUD_PROJECT (or _ID) for Gemini CLI project
	// discovery; "" when unset.
	GoogleProject string
	// PollInterval is the wait between Cloud Code Assist onboarding polls
	// (default 5 s for Gemini CLI, 1 s for Antigravity, as the reference).
	PollInterval time.Duration
}

func (o *LoginOptions) progress(msg string) {
	if o.Progress != nil {
		o.Progress(msg)
	}
}

// callback is what the loopback server received.
type callback struct {
	code, state string
	err         error // the provider reported an error (user denied consent)
}

// Login runs the authorization-code flow of provider with PKCE (S256 where
// the provider uses it) and returns the new credential with the provider's
// follow-up applied (identity, organization, Google project).
//
// It listens for the callback on the redirect URI's loopback port, hands the
// authorization URL to o.Auth and o.Browser, and waits for whichever comes
// first: the callback, or a pasted redirect URL or code on o.Paste. A
// callback or paste whose state differs from the one generated here is
// rejected before any token request. The wait ends with ErrLoginCancelled
// when ctx ends and with *LoginTimeoutError after o.Timeout. Nothing is
// stored: the caller persists the returned credential.
func (r *Registry) Login(ctx context.Context, provider string, o LoginOptions) (vault.Credential, error) {
	p, ok := r.byID[provider]
	if !ok {
		//lint:ignore ST1005 the reference error text, shown to users as is
		return vault.Credential{}, fmt.Errorf("Unknown OAuth provider '%s'", provider)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLoginTimeout
	}
	redirect := o.RedirectURL
	if redirect == "" {
		redirect = p.RedirectURL()
	}
	state, verifier := NewState(), ""
	if p.PKCE {
		verifier = NewVerifier()
	}

	results := make(chan callback, 1)
	ln, path, err := listenCallback(redirect)
	switch {
	case err != nil && o.Paste == nil:
		return vault.Credential{}, err
	case err != nil: // the user can still paste the redirect URL from the browser
		o.progress(err.Error() + "; paste the redirect URL from the browser's address bar instead.")
	case ln == nil: // not a loopback redirect: the user pastes
		o.progress("The redirect URI " + redirect + " does not reach this machine: paste the redirect URL or code when the browser shows it.")
	default:
		if u, _ := url.Parse(redirect); u != nil && u.Port() == "0" {
			u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			redirect = u.String()
		}
		srv := &http.Server{Handler: callbackHandler(path, state, results), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	authURL := p.AuthCodeURL(state, verifier, redirect)
	if o.Auth != nil {
		o.Auth(authURL, p.Instructions)
	}
	// The callback can only arrive when a browser here was opened on the
	// URL and the loopback listener runs; otherwise the code must be pasted.
	reachable := ln != nil && o.Browser != nil
	if o.Browser != nil {
		if err := o.Browser(authURL); err != nil {
			o.progress("Could not open a browser (" + err.Error() + "); open the URL above yourself.")
			reachable = false
		}
	}

	code, err := waitCode(ctx, state, results, o, reachable)
	if errors.Is(err, errPasteClosed) {
		return vault.Credential{}, &NoInputError{Provider: provider}
	}
	if err != nil {
		return vault.Credential{}, err
	}
	o.progress("Exchanging the authorization code...")
	xctx, cancel := context.WithTimeout(ctx, followUpTimeout)
	cred, tok, err := r.exchange(xctx, provider, code, state, verifier, redirect, o.HTTPClient)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return vault.Credential{}, ErrLoginCancelled
		}
		return vault.Credential{}, err
	}
	cred, err = r.followUp(ctx, p, cred, tok, &o)
	if err != nil {
		if ctx.Err() != nil {
			return vault.Credential{}, ErrLoginCancelled
		}
		return vault.Credential{}, err
	}
	if ctx.Err() != nil { // cancelled while the last request finished
		return vault.Credential{}, ErrLoginCancelled
	}
	return cred, nil
}

// waitCode waits for the callback or a paste with our state and returns the
// authorization code.
// Without a callback, input at its end (o.Paste closed) fails at once with
// errPasteClosed instead of waiting out o.Timeout.
func waitCode(ctx context.Context, state string, results <-chan callback, o LoginOptions, reachable bool) (string, error) {
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	paste := o.Paste
	for {
		select {
		case <-ctx.Done():
			return "", ErrLoginCancelled
		case <-timer.C:
			return "", &LoginTimeoutError{After: o.Timeout}
		case cb := <-results:
			if cb.err != nil {
				return "", cb.err
			}
			return cb.code, nil
		case in, ok := <-paste:
			if !ok {
				if !reachable {
					return "", errPasteClosed
				}
				paste = nil // stdin closed: the callback may still come
				continue
			}
			if strings.TrimSpace(in) == "" {
				continue // an empty line (Enter) is not an attempt
			}
			code, got := ParsePaste(in)
			switch {
			case code == "":
				o.progress("No authorization code in what was pasted; paste the full redirect URL or the code.")
			case got != "" && got != state:
				o.progress("State mismatch - the pasted code is not from this login attempt; paste the redirect URL of this login.")
			default:
				return code, nil
			}
		}
	}
}

// listenCallback listens on the loopback address of redirect and returns
// the listener and the callback path. It returns a nil listener when
// redirect is not a loopback http URI (the user pastes instead), and a
// listen error as is: the port is the one registered with the provider, so
// falling back to another would break the redirect.
func listenCallback(redirect string) (net.Listener, string, error) {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" {
		return nil, "", nil
	}
	host := u.Hostname()
	if host != "localhost" && host != "127.0.0.1" && host != "::1" {
		return nil, "", nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	bind := "127.0.0.1"
	if host == "::1" {
		bind = "::1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, port))
	if err != nil {
		return nil, "", fmt.Errorf("OAuth callback: cannot listen on %s (is another login or program using port %s?): %w", net.JoinHostPort(bind, port), port, err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	return ln, path, nil
}

// callbackHandler answers the provider's redirect. Only a request on path
// with our state resolves the login; a provider error carrying our state
// ends it (the user denied consent); anything else is answered and ignored,
// since any local process can send a forged request.
func callbackHandler(path, state string, results chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != path {
			http.NotFound(w, req)
			return
		}
		q := req.URL.Query()
		code, got, oerr := q.Get("code"), q.Get("state"), q.Get("error")
		var res *callback
		status, msg := http.StatusOK, "Login complete. You can close this window and return to the terminal."
		switch {
		case oerr != "" && got == state:
			desc := q.Get("error_description")
			if desc == "" {
				desc = oerr
			}
			res = &callback{err: fmt.Errorf("Authorization failed: %s", desc)}
			status, msg = http.StatusBadRequest, "Authorization failed: "+desc
		case oerr != "":
			status, msg = http.StatusBadRequest, "Authorization failed: "+oerr
		case code == "":
			status, msg = http.StatusBadRequest, "Missing authorization code"
		case got != state:
			status, msg = http.StatusBadRequest, "State mismatch - possible CSRF attack"
		default:
			res = &callback{code: code, state: got}
		}
		if res != nil {
			select {
			case results <- *res:
			default: // a second callback: the first one wins
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>omp login</title><p>%s</p>\n", html.EscapeString(msg))
	})
}
