package oauth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// followUpTimeout bounds each request of a login follow-up (the reference's
// OAUTH_REQUEST_TIMEOUT_MS).
const followUpTimeout = 30 * time.Second

// followUp completes a fresh login credential the way each provider's
// reference flow does after the code exchange:
//   - anthropic: orgId/orgName from the reply's organization, authorizedAt,
//     and the Claude Code bootstrap endpoint when identity is missing;
//   - openai-codex: orgId = accountId and orgName = plan type from the token
//     claims; a login without any identity fails;
//   - google-gemini-cli / google-antigravity: the email from userinfo and the
//     Cloud Code Assist project (discovered, or provisioned on the free tier);
//   - stencil: the email and account id (sub) from userinfo;
//   - gitlab-duo: a self-managed instance (authorize URL not on gitlab.com)
//     is recorded as enterpriseUrl, the instance's origin.
func (r *Registry) followUp(ctx context.Context, p *Provider, cred vault.Credential, tok *oauth2.Token, o *LoginOptions) (vault.Credential, error) {
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	switch p.ID {
	case "anthropic":
		org, _ := tok.Extra("organization").(map[string]any)
		orgID, _ := org["uuid"].(string)
		orgName, _ := org["name"].(string)
		if cred.AccountID == "" || cred.Email == "" || orgID == "" {
			if b, err := r.anthropicBootstrap(ctx, hc, cred.Access); err == nil { // failures ignored (reference)
				cred.AccountID = cmp.Or(cred.AccountID, b.AccountUUID)
				cred.Email = cmp.Or(cred.Email, b.AccountEmail)
				orgID = cmp.Or(orgID, b.OrgUUID)
				orgName = cmp.Or(orgName, b.OrgName)
			}
		}
		setExtra(&cred, "orgId", orgID)
		setExtra(&cred, "orgName", orgName)
		setExtraNumber(&cred, "authorizedAt", r.now().UnixMilli())
	case "openai-codex":
		if cred.AccountID == "" && cred.Email == "" {
			return cred, errors.New("Failed to extract account identity from token")
		}
		setExtra(&cred, "orgId", cred.AccountID)
		idToken, _ := tok.Extra("id_token").(string)
		setExtra(&cred, "orgName", codexPlanType(cred.Access, idToken))
	case "google-gemini-cli", "google-antigravity":
		email, err := r.googleEmail(ctx, p.ID, hc, cred.Access)
		if err != nil {
			o.progress("Could not read the Google account email: " + err.Error())
		}
		cred.Email = cmp.Or(email, cred.Email)
		var project string
		if p.ID == "google-gemini-cli" {
			project, err = r.geminiProject(ctx, hc, cred.Access, o)
		} else {
			project, err = r.antigravityProject(ctx, hc, cred.Access, o)
		}
		if err != nil {
			return cred, err
		}
		cred.ProjectID = project
	case "stencil":
		// OpenID userinfo: email and sub; failures leave the login without them.
		u := cmp.Or(r.urls(p.ID, KindUserinfoURL), provider.StencilUserinfoURL)
		var info struct {
			Email string `json:"email"`
			Sub   string `json:"sub"`
		}
		if err := getJSON(ctx, hc, http.MethodGet, u, nil, map[string]string{"Authorization": "Bearer " + cred.Access}, &info, "userinfo"); err == nil {
			cred.Email = cmp.Or(strings.TrimSpace(info.Email), cred.Email)
			cred.AccountID = cmp.Or(strings.TrimSpace(info.Sub), cred.AccountID)
		}
	case "gitlab-duo":
		if u, err := url.Parse(p.Config.Endpoint.AuthURL); err == nil && u.Host != "" && u.Hostname() != "gitlab.com" {
			cred.EnterpriseURL = u.Scheme + "://" + u.Host
		}
	}
	return cred, nil
}

// codexPlanType is chatgpt_plan_type from the access token, else the id
// token, lowercased.
func codexPlanType(access, idToken string) string {
	for _, t := range []string{access, idToken} {
		if auth, ok := vault.JWTClaims(t)[provider.OpenAIAuthClaim].(map[string]any); ok {
			if s, ok := auth["chatgpt_plan_type"].(string); ok && strings.TrimSpace(s) != "" {
				return strings.ToLower(strings.TrimSpace(s))
			}
		}
	}
	return ""
}

type anthropicAccount struct {
	AccountUUID  string `json:"account_uuid"`
	AccountEmail string `json:"account_email"`
	OrgUUID      string `json:"organization_uuid"`
	OrgName      string `json:"organization_name"`
}

// anthropicBootstrap reads the signed-in account from the Claude Code
// bootstrap endpoint (root: providers.anthropic.baseUrl).
func (r *Registry) anthropicBootstrap(ctx context.Context, hc *http.Client, access string) (anthropicAccount, error) {
	base := strings.TrimRight(cmp.Or(r.urls("anthropic", KindBaseURL), provider.AnthropicBaseURL), "/")
	var out struct {
		OAuthAccount anthropicAccount `json:"oauth_account"`
	}
	err := getJSON(ctx, hc, http.MethodGet, base+provider.AnthropicBootstrapPath+"?entrypoint=cli", nil, map[string]string{
		"Authorization":  "Bearer " + access,
		"User-Agent":     "claude-code/" + provider.ClaudeCodeVersion(),
		"anthropic-beta": provider.AnthropicBetasRefresh,
		"Accept":         "application/json",
	}, &out, "Anthropic bootstrap")
	return out.OAuthAccount, err
}

// googleEmail reads the account email from Google's userinfo endpoint.
func (r *Registry) googleEmail(ctx context.Context, id string, hc *http.Client, access string) (string, error) {
	u := cmp.Or(r.urls(id, KindUserinfoURL), provider.GoogleUserinfoURL)
	var out struct {
		Email string `json:"email"`
	}
	err := getJSON(ctx, hc, http.MethodGet, u, nil, map[string]string{"Authorization": "Bearer " + access}, &out, "userinfo")
	return strings.TrimSpace(out.Email), err
}

// codeAssist is the subset of loadCodeAssist / onboardUser replies a login reads.
type codeAssist struct {
	Project     string `json:"cloudaicompanionProject"`
	CurrentTier *struct {
		ID string `json:"id"`
	} `json:"currentTier"`
	PaidTier     *struct{} `json:"paidTier"`
	AllowedTiers []struct {
		ID        string `json:"id"`
		IsDefault bool   `json:"isDefault"`
	} `json:"allowedTiers"`
}

type operation struct {
	Name  string `json:"name"`
	Done  bool   `json:"done"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Response *struct {
		// Gemini CLI answers an object, Antigravity a string.
		Project json.RawMessage `json:"cloudaicompanionProject"`
	} `json:"response"`
}

// project returns the operation's project id ("" if none).
func (op operation) project() string {
	if op.Response == nil {
		return ""
	}
	var s string
	if json.Unmarshal(op.Response.Project, &s) == nil {
		return s
	}
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(op.Response.Project, &obj)
	return obj.ID
}

const workspaceProjectHint = "This account requires setting the GOOGLE_CLOUD_PROJECT or GOOGLE_CLOUD_PROJECT_ID environment variable. See https://goo.gle/gemini-cli-auth-docs#workspace-gca"

// geminiProject discovers (or provisions) the Gemini CLI Cloud Code Assist
// project: loadCodeAssist, then onboardUser on the default tier and its
// long-running operation (reference discoverProject).
func (r *Registry) geminiProject(ctx context.Context, hc *http.Client, access string, o *LoginOptions) (string, error) {
	base := strings.TrimRight(cmp.Or(r.urls("google-gemini-cli", KindBaseURL), provider.CodeAssistURL), "/")
	headers := map[string]string{
		"Authorization":   "Bearer " + access,
		"Content-Type":    "application/json",
		"User-Agent":      provider.GeminiCLIUsageUserAgent,
		"Client-Metadata": "ideType=IDE_UNSPECIFIED,platform=PLATFORM_UNSPECIFIED,pluginType=GEMINI",
	}
	env := o.GoogleProject
	meta := map[string]any{"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}
	load := map[string]any{"metadata": withKey(meta, "duetProject", env)}
	if env != "" {
		load["cloudaicompanionProject"] = env
	}
	o.progress("Checking for existing Cloud Code Assist project...")
	var ca codeAssist
	if err := getJSON(ctx, hc, http.MethodPost, base+"/v1internal:loadCodeAssist", load, headers, &ca, "loadCodeAssist"); err != nil {
		return "", err
	}
	if ca.CurrentTier != nil {
		if p := cmp.Or(ca.Project, env); p != "" {
			return p, nil
		}
		return "", errors.New(workspaceProjectHint)
	}
	tier := "legacy-tier"
	for _, t := range ca.AllowedTiers {
		if t.IsDefault {
			tier = cmp.Or(t.ID, "free-tier")
			break
		}
	}
	if tier != "free-tier" && env == "" {
		return "", errors.New(workspaceProjectHint)
	}
	o.progress("Provisioning Cloud Code Assist project (this may take a moment)...")
	body := map[string]any{"tierId": tier, "metadata": meta}
	if tier != "free-tier" {
		body["cloudaicompanionProject"] = env
		body["metadata"] = withKey(meta, "duetProject", env)
	}
	op, err := r.onboard(ctx, hc, base, body, headers, 24, pollInterval(o, 5*time.Second), o)
	if err != nil {
		return "", err
	}
	if p := cmp.Or(op.project(), env); p != "" {
		return p, nil
	}
	return "", errors.New("Could not discover or provision a Google Cloud project. Try setting the GOOGLE_CLOUD_PROJECT or GOOGLE_CLOUD_PROJECT_ID environment variable. See https://goo.gle/gemini-cli-auth-docs#workspace-gca")
}

// antigravityProject discovers the Antigravity project, onboarding the free
// tier first when the account has none (reference discoverProject).
func (r *Registry) antigravityProject(ctx context.Context, hc *http.Client, access string, o *LoginOptions) (string, error) {
	base := strings.TrimRight(cmp.Or(r.urls("google-antigravity", KindBaseURL), provider.AntigravityURL), "/")
	headers := map[string]string{
		"Authorization": "Bearer " + access,
		"Content-Type":  "application/json",
		"User-Agent":    provider.AntigravityUserAgent,
	}
	meta := map[string]any{"ideType": "ANTIGRAVITY"}
	load := func() (codeAssist, error) {
		var ca codeAssist
		err := getJSON(ctx, hc, http.MethodPost, base+"/v1internal:loadCodeAssist", map[string]any{"metadata": meta}, headers, &ca, "loadCodeAssist")
		if err == nil && ca.PaidTier == nil && ca.Project != "" {
			err = getJSON(ctx, hc, http.MethodPost, base+"/v1internal:loadCodeAssist",
				map[string]any{"cloudaicompanionProject": ca.Project, "metadata": meta}, headers, &ca, "loadCodeAssist")
		}
		return ca, err
	}
	o.progress("Checking Cloud Code Assist account status...")
	ca, err := load()
	if err != nil {
		return "", err
	}
	if ca.CurrentTier == nil {
		o.progress("Provisioning the Antigravity free tier...")
		if _, err := r.onboard(ctx, hc, base, map[string]any{"tierId": "free-tier", "metadata": meta}, headers, 30, pollInterval(o, time.Second), o); err != nil {
			return "", err
		}
	}
	o.progress("Refreshing Cloud Code Assist project...")
	if ca, err = load(); err != nil {
		return "", err
	}
	if ca.Project == "" {
		return "", errors.New("loadCodeAssist did not return a cloudaicompanionProject")
	}
	return ca.Project, nil
}

// onboard posts onboardUser and polls its operation until done, at most
// attempts times.
func (r *Registry) onboard(ctx context.Context, hc *http.Client, base string, body any, headers map[string]string, attempts int, every time.Duration, o *LoginOptions) (operation, error) {
	var op operation
	if err := getJSON(ctx, hc, http.MethodPost, base+"/v1internal:onboardUser", body, headers, &op, "onboardUser"); err != nil {
		return op, err
	}
	for i := 1; !op.Done; i++ {
		if op.Name == "" {
			return op, errors.New("onboardUser returned an operation without a name")
		}
		if i >= attempts {
			return op, fmt.Errorf("Project provisioning did not complete after %d attempts", attempts)
		}
		o.progress(fmt.Sprintf("Waiting for project provisioning (attempt %d/%d)...", i+1, attempts))
		select {
		case <-ctx.Done():
			return op, ErrLoginCancelled
		case <-time.After(every):
		}
		if err := getJSON(ctx, hc, http.MethodGet, base+"/v1internal/"+op.Name, nil, headers, &op, "onboardUser operation"); err != nil {
			return op, err
		}
	}
	if op.Error != nil {
		return op, fmt.Errorf("OnboardUser operation failed: %d: %s", op.Error.Code, op.Error.Message)
	}
	return op, nil
}

func pollInterval(o *LoginOptions, def time.Duration) time.Duration {
	if o.PollInterval > 0 {
		return o.PollInterval
	}
	return def
}

// getJSON sends one follow-up request (JSON body when body is not nil) and
// decodes a 200 reply into out. A failure names label and the status and
// carries at most a short excerpt of the reply; never the bearer token.
func getJSON(ctx context.Context, hc *http.Client, method, u string, body any, headers map[string]string, out any, label string) error {
	ctx, cancel := context.WithTimeout(ctx, followUpTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry nothing secret, but keep the message short
		}
		return fmt.Errorf("%s failed: %w", label, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s failed: %w", label, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s failed: %s", label, FormatEndpointError(resp.StatusCode, string(data)))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s returned invalid JSON: %w", label, err)
	}
	return nil
}

func withKey(m map[string]any, k, v string) map[string]any {
	out := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	if v != "" {
		out[k] = v
	}
	return out
}

// setExtra stores a string field of the credential's provider data ("" is
// not stored).
func setExtra(c *vault.Credential, k, v string) {
	if v == "" {
		return
	}
	b, _ := json.Marshal(v)
	if c.Extra == nil {
		c.Extra = map[string]json.RawMessage{}
	}
	c.Extra[k] = b
}

func setExtraNumber(c *vault.Credential, k string, v int64) {
	b, _ := json.Marshal(v)
	if c.Extra == nil {
		c.Extra = map[string]json.RawMessage{}
	}
	c.Extra[k] = b
}
