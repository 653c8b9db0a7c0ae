package proxy

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/usage"
)

// Credential check timings and texts.
const (
	// UsageProbeTimeout bounds one credential's usage probe.
	UsageProbeTimeout = 10 * time.Second
	// ChatProbeTimeout bounds one completion-probe attempt.
	ChatProbeTimeout = 15 * time.Second
	// ChatProbeModels is the most models the completion probe tries.
	ChatProbeModels = 4

	chatProbeSystem = "Connectivity check. Reply with the single word 'pong'."
)

// chatProbeWalk matches the failures after which the completion probe
// tries the next candidate model (a missing or retired model).
var chatProbeWalk = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)not[_ -]found|invalid[_ -]model|model[_ -]is[_ -]not[_ -]valid|no longer supported|deprecated|404|decommissioned`)
})

// CredentialHealth is one row of GET /v1/credentials/check and of
// `omp auth-gateway check` (the reference's CredentialHealthResult). OK is
// true when the usage probe succeeded, false when the credential was
// rejected, null when nothing could be probed.
type CredentialHealth struct {
	ID            int64              `json:"id"`
	Provider      string             `json:"provider"`
	Type          string             `json:"type"`
	OK            *bool              `json:"ok"`
	Email         string             `json:"email,omitempty"`
	AccountID     string             `json:"accountId,omitempty"`
	OrgID         string             `json:"orgId,omitempty"`   // from the usage report (18.1.21)
	OrgName       string             `json:"orgName,omitempty"` // from the usage report (18.1.21)
	RemoteRefresh bool               `json:"remoteRefresh,omitempty"`
	Reason        string             `json:"reason,omitempty"`
	Report        *vault.UsageReport `json:"report,omitempty"`
	Completion    *CompletionHealth  `json:"completion,omitempty"`
}

// CompletionHealth is the outcome of the --strict completion probe.
type CompletionHealth struct {
	OK        *bool  `json:"ok"`
	Reason    string `json:"reason,omitempty"`
	ModelID   string `json:"modelId,omitempty"`
	LatencyMs *int64 `json:"latencyMs,omitempty"`
}

// CheckCredentials probes every active credential sequentially (no
// synchronized bursts from one IP), as checkCredentials: an
// expired OAuth token is refreshed through the Source first, then the
// provider's usage probe runs from this host with the credential. strict
// also sends a tiny completion per credential, which can consume
// quota; GET /v1/credentials/check never does.
func (s *Server) CheckCredentials(ctx context.Context, strict bool) ([]CredentialHealth, error) {
	entries, err := s.source.List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]CredentialHealth, 0, len(entries))
	for _, e := range entries {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, s.checkOne(ctx, e, strict))
	}
	return out, nil
}

func (s *Server) checkOne(ctx context.Context, e vault.Entry, strict bool) CredentialHealth {
	c := e.Credential
	h := CredentialHealth{ID: e.ID, Provider: e.Provider, Type: string(c.Type), Email: c.Email, AccountID: c.AccountID,
		RemoteRefresh: c.IsOAuth() && c.Refresh == vault.RemoteRefreshSentinel}
	if c.IsOAuth() && s.now().UnixMilli() >= c.Expires {
		fresh, err := s.source.Refresh(ctx, e.ID)
		if err != nil {
			h.OK, h.Reason = ptrTo(false), "oauth refresh failed: "+err.Error()
			return h
		}
		e = fresh
	}
	h.OK, h.Reason, h.Report = s.usageProbe(ctx, e)
	if h.Report != nil {
		if h.Email == "" {
			h.Email, _ = h.Report.Metadata["email"].(string)
		}
		if h.AccountID == "" {
			h.AccountID, _ = h.Report.Metadata["accountId"].(string)
		}
		h.OrgID, _ = h.Report.Metadata["orgId"].(string)
		h.OrgName, _ = h.Report.Metadata["orgName"].(string)
	}
	if strict {
		h.Completion = s.chatProbe(ctx, e)
	}
	return h
}

// usageProbe runs the provider's usage probe for e.
func (s *Server) usageProbe(ctx context.Context, e vault.Entry) (*bool, string, *vault.UsageReport) {
	var p usage.Prober
	for _, q := range s.probers {
		if q.ID() == e.Provider {
			p = q
			break
		}
	}
	if p == nil {
		return nil, "no usage probe configured for provider " + e.Provider, nil
	}
	if !p.Supports(e.Credential) {
		return nil, "usage probe does not support " + string(e.Credential.Type) + " credentials for " + e.Provider, nil
	}
	pctx, cancel := context.WithTimeout(ctx, UsageProbeTimeout)
	defer cancel()
	rep, err := p.Fetch(pctx, usage.Request{Provider: e.Provider, Credential: e.Credential,
		BaseURL: s.urls(e.Provider, usage.KindUsageURL), HTTP: s.client, Now: s.now, Logger: s.log})
	switch {
	case err != nil:
		return ptrTo(false), err.Error(), nil
	case rep == nil:
		return nil, "usage probe returned no data for this credential", nil
	}
	return ptrTo(true), "", rep
}

// probeModels returns the completion-probe candidates of provider:
// bundled models the gateway can serve, with text
// input, a finite non-negative price and an output limit, cheapest first
// (then by id), at most ChatProbeModels. Models of wire APIs the gateway
// does not serve (Bedrock, Vertex, Cursor, pi-native transports) never
// qualify.
func (s *Server) probeModels(provider string) []llm.Model {
	var out []llm.Model
	for _, m := range s.models.catalog.Models() {
		cost := m.Cost.Input + m.Cost.Output
		if m.Provider != provider || m.ModelKind() != llm.KindChat || !slices.Contains(m.Input, llm.ModalityText) || m.MaxTokens <= 0 ||
			cost < 0 || math.IsNaN(cost) || math.IsInf(cost, 0) {
			continue
		}
		if _, err := s.provider(&m); err != nil {
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b llm.Model) int {
		ca, cb := a.Cost.Input+a.Cost.Output, b.Cost.Input+b.Cost.Output
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > ChatProbeModels {
		out = out[:ChatProbeModels]
	}
	return out
}

// chatProbe sends "ping" to the cheapest candidate models of e's provider
// with e, walking to the next model only when the failure says the model
// is missing or retired.
func (s *Server) chatProbe(ctx context.Context, e vault.Entry) *CompletionHealth {
	cands := s.probeModels(e.Provider)
	if len(cands) == 0 {
		return &CompletionHealth{Reason: "no bearer-compatible probe model bundled for provider " + e.Provider}
	}
	if pick.Secret(e) == "" {
		return &CompletionHealth{Reason: "no bearer bytes available for " + string(e.Credential.Type) + " credential"}
	}
	ctx, cancel := context.WithTimeout(ctx, ChatProbeTimeout*(ChatProbeModels+1))
	defer cancel()
	var last *CompletionHealth
	for _, m := range cands {
		if ctx.Err() != nil {
			return &CompletionHealth{OK: ptrTo(false), Reason: "aborted", ModelID: m.ID}
		}
		r := s.chatAttempt(ctx, e, m)
		if *r.OK || !chatProbeWalk().MatchString(r.Reason) {
			return r
		}
		last = r
	}
	if last == nil {
		return &CompletionHealth{OK: ptrTo(false), Reason: "all " + strconv.Itoa(len(cands)) + " probe models failed for provider " + e.Provider}
	}
	return last
}

// chatAttempt is one completion-probe request through the gateway's own
// upstream provider for m.
func (s *Server) chatAttempt(ctx context.Context, e vault.Entry, m llm.Model) *CompletionHealth {
	ctx, cancel := context.WithTimeout(ctx, ChatProbeTimeout)
	defer cancel()
	start := s.now()
	fail := func(reason string) *CompletionHealth {
		ms := s.now().Sub(start).Milliseconds()
		return &CompletionHealth{OK: ptrTo(false), Reason: reason, ModelID: m.ID, LatencyMs: &ms}
	}
	prov, err := s.provider(&m)
	if err != nil {
		return fail(err.Error())
	}
	req := &llm.Request{Model: m.ID, System: []llm.SystemBlock{{Text: chatProbeSystem}},
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("ping")}}},
		MaxTokens: 32, Stream: true}
	st, err := prov.Stream(ctx, req, &m, pick.LLMCredential(e))
	if err != nil {
		return fail(err.Error())
	}
	defer st.Close()
	var final *llm.Message
	for ev := range st.Events() {
		if ev.Type.IsTerminal() {
			final = ev.Partial
			break
		}
	}
	if final == nil {
		return fail("chat probe ended without a result")
	}
	if r := final.StopReason; r == llm.StopError || r == llm.StopAborted {
		if final.ErrorMessage != "" {
			return fail(final.ErrorMessage)
		}
		return fail("chat probe ended with stopReason=" + string(r))
	}
	ms := s.now().Sub(start).Milliseconds()
	return &CompletionHealth{OK: ptrTo(true), ModelID: m.ID, LatencyMs: &ms}
}

func ptrTo[T any](v T) *T { return &v }
