package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/internal/retryafter"
	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// DefaultBaseURL is the Anthropic API origin.
const DefaultBaseURL = provider.AnthropicBaseURL

// APIVersion is the anthropic-version header value.
const APIVersion = "2023-06-01"

// oauthBetas is the anthropic-beta set sent with OAuth tokens.
const oauthBetas = provider.AnthropicBetasMessagesOAuth

// userProfileHeader names the Claude user profile a request is made for;
// a client's value is passed on to Anthropic with either credential kind.
const userProfileHeader = "anthropic-user-profile-id"

// maxErrorBody bounds how much of a non-2xx body is read.
const maxErrorBody = 1 << 20

// Provider is the upstream llm.Provider for the Anthropic Messages API.
// The zero value is ready to use.
type Provider struct {
	// BaseURL overrides the API origin (default: the model's BaseURL, then
	// DefaultBaseURL). The request goes to BaseURL + "/v1/messages".
	BaseURL string
	// Client sends the requests (default http.DefaultClient).
	Client *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

var _ llm.Provider = (*Provider)(nil)

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provider) endpoint(model llm.Model) string {
	base := p.BaseURL
	if base == "" {
		base = model.BaseURL
	}
	if base == "" {
		base = DefaultBaseURL
	}
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + "/messages"
	}
	return base + "/v1/messages"
}

// Stream sends req as a streaming Messages request. It returns an
// *llm.UpstreamError when the upstream answers non-2xx, or when its first
// event is already an error, so the gateway can still answer with an HTTP
// status.
//
// Two fallbacks retry once, before anything was streamed, and the session
// (req.Session) remembers them for its later requests to the same endpoint
// and model: when the upstream rejects strict tool schemas the request is
// sent again without them, and when it rejects the signature of replayed
// thinking (a block signed by another signer, such as a proxy's former
// upstream) it is sent again without any replayed thinking. Stored history
// keeps its thinking; only the upstream request changes.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	scope := llm.UpstreamScope(providerID(*model), p.endpoint(*model), model.ID)
	strict := hasStrictTools(req)
	if strict && req.Session.StrictToolsDisabled(scope) {
		req, strict = withoutStrictTools(req), false
	}
	thinking := hasReplayedThinking(req)
	if thinking && req.Session.ThinkingReplayDisabled(scope) {
		req, thinking = withoutReplayedThinking(req), false
	}
	for {
		st, err := p.sendVersioned(ctx, req, model, cred)
		if err == nil || ctx.Err() != nil {
			return st, err
		}
		switch {
		case strict && strictRejected(err):
			req.Session.DisableStrictTools(scope)
			req, strict = withoutStrictTools(req), false
		case thinking && thinkingSignatureRejected(err):
			req.Session.DisableThinkingReplay(scope)
			req, thinking = withoutReplayedThinking(req), false
		default:
			return st, err
		}
	}
}

// sendVersioned sends req presenting the process's Claude Code version.
// With an OAuth token, a rejection of that version which names a newer
// minimum makes the minimum the process's version
// (provider.AdoptClaudeCodeVersion) and the request is sent once more.
func (p *Provider) sendVersioned(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	version := provider.ClaudeCodeVersion()
	st, err := p.send(ctx, req, model, cred, version)
	if cred.Kind == llm.CredentialOAuth && clientUserAgent(req) == "" && versionTooOld(err, version) {
		return p.send(ctx, req, model, cred, provider.ClaudeCodeVersion())
	}
	return st, err
}

// send makes one upstream call; version is the Claude Code version an
// OAuth request presents.
func (p *Provider) send(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential, version string) (*llm.Stream, error) {
	hreq, release, err := p.newRequest(ctx, req, model, cred, version)
	if err != nil {
		return nil, err
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	release()
	return p.answer(ctx, model, cred.Kind == llm.CredentialOAuth, resp, err)
}

// versionTooOld reports whether err rejects the Claude Code version sent
// and the process has moved to the newer minimum it names.
func versionTooOld(err error, sent string) bool {
	var ue *llm.UpstreamError
	if !errors.As(err, &ue) {
		return false
	}
	if ue.Type != provider.ClaudeCodeVersionTooOld && !strings.Contains(ue.Message, provider.ClaudeCodeVersionTooOld) {
		return false
	}
	return provider.AdoptClaudeCodeVersion(sent, ue.Message)
}

// newRequest builds the upstream request of req; release recycles its body
// once the transport has sent it.
func (p *Provider) newRequest(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential, version string) (hreq *http.Request, release func(), err error) {
	oauth := cred.Kind == llm.CredentialOAuth
	// A recycled buffer: a large request is encoded without a fresh,
	// zeroed allocation; it goes back once the transport has sent it.
	body := EncodeRequest(httpx.GetBuffer(encodedSizeHint(req)), req, *model, oauth, true)
	hreq, release, err = httpx.NewBufferRequest(ctx, http.MethodPost, p.endpoint(*model), body)
	if err != nil {
		return nil, nil, fmt.Errorf("anthropic: build request: %w", err)
	}
	p.setHeaders(hreq.Header, req, *model, cred, version)
	return hreq, release, nil
}

// answer turns the upstream's answer (or the error of the call) into the
// stream or the error of Stream.
func (p *Provider) answer(ctx context.Context, model *llm.Model, oauth bool, resp *http.Response, err error) (*llm.Stream, error) {
	if err != nil {
		msg, cause := httpx.TransportFailure(err)
		return nil, llm.TransportError(providerID(*model), msg, cause)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, p.responseError(resp, *model)
	}
	s := &streamState{
		p: p, ctx: ctx, model: *model, oauth: oauth, body: resp.Body,
		rd: sse.NewReader(resp.Body), reqID: resp.Header.Get("request-id"),
	}
	// Peek the first event: an error before message_start becomes an HTTP
	// error for the caller, since nothing has been committed to it yet.
	if err := s.peek(); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return llm.NewStream(s.run, resp.Body), nil
}

func providerID(model llm.Model) string {
	if model.Provider != "" {
		return model.Provider
	}
	return "anthropic"
}

func (p *Provider) setHeaders(h http.Header, req *llm.Request, model llm.Model, cred llm.Credential, version string) {
	for k, v := range model.Headers {
		h.Set(k, v)
	}
	// The constant headers go straight into the map (see reqHeaders).
	h["Content-Type"] = reqHeaders.contentType
	h["Accept"] = reqHeaders.accept
	h[reqHeaders.versionKey] = reqHeaders.version
	clientBeta := ""
	for k, v := range req.Headers {
		switch {
		case strings.EqualFold(k, "anthropic-beta") && req.OriginAPI == llm.APIAnthropic:
			clientBeta = v
		case strings.EqualFold(k, userProfileHeader) && v != "":
			h.Set(userProfileHeader, v)
		}
	}
	switch cred.Kind {
	case llm.CredentialAPIKey:
		h[reqHeaders.apiKeyKey] = []string{cred.Secret}
		if clientBeta != "" {
			h.Set("anthropic-beta", clientBeta)
		}
	case llm.CredentialOAuth:
		h.Set("Authorization", "Bearer "+cred.Secret)
		h.Set("anthropic-beta", mergeBetas(oauthBetas, clientBeta))
		ua := clientUserAgent(req)
		if ua == "" {
			ua = provider.ClaudeCodeUserAgentFor(version)
		}
		h.Set("User-Agent", ua)
		h.Set("x-app", "cli")
		h.Set("anthropic-dangerous-direct-browser-access", "true")
	}
}

// clientUserAgent returns the client's own Claude Code User-Agent
// ("claude-cli…"), which an OAuth request carries in place of ours; ""
// when the client sent none.
func clientUserAgent(req *llm.Request) string {
	ua := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, "user-agent") && strings.HasPrefix(strings.ToLower(v), "claude-cli") {
			ua = v
		}
	}
	return ua
}

// reqHeaders are the constant upstream request headers, set straight into
// the header map under canonical keys rather than through Header.Set,
// which allocates a value slice (and, for a key net/http does not know, a
// canonical copy of it) per header per request. The value slices are
// shared: nothing modifies a header value in place, and each is full
// (len = cap), so an Add copies.
var reqHeaders = struct {
	contentType, accept, version []string
	versionKey, apiKeyKey        string
}{
	[]string{"application/json"}, []string{"text/event-stream"}, []string{APIVersion},
	http.CanonicalHeaderKey("anthropic-version"), http.CanonicalHeaderKey("x-api-key"),
}

// mergeBetas joins comma-separated beta lists, dropping duplicates.
func mergeBetas(lists ...string) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, b := range strings.Split(l, ",") {
			b = strings.TrimSpace(b)
			if b != "" && !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	return strings.Join(out, ",")
}

// responseError reads a non-2xx response into an *llm.UpstreamError. The
// body may be an Anthropic envelope, an OpenAI-shaped one, or plain text.
func (p *Provider) responseError(resp *http.Response, model llm.Model) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ue := &llm.UpstreamError{
		Provider:   providerID(model),
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("request-id"),
		RetryAfter: retryafter.Parse(resp.Header.Get("retry-after"), resp.Header.Get("retry-after-ms"), p.now()),
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	var we wireError
	if json.Unmarshal(b, &env) == nil && json.Unmarshal(env.Error, &we) == nil {
		ue.Type, ue.Message = we.Type, we.Message
	}
	if ue.Message == "" {
		ue.Message = strings.TrimSpace(string(b))
		if len(ue.Message) > 512 {
			ue.Message = ue.Message[:512]
		}
	}
	if ue.Message == "" {
		ue.Message = http.StatusText(resp.StatusCode)
	}
	return ue
}

// errTruncated reports an upstream stream that ended before message_stop.
var errTruncated = errors.New("anthropic stream ended before message_stop")

// encodedSizeHint is a capacity for the encoded request: the text the
// request carries plus room for the JSON around it, so a long conversation
// is encoded into one allocation instead of a series of growing copies.
// The base is small: a streamed request's body stays referenced (by the
// HTTP client, for a replay on a stale connection) while the stream is
// open, so its slack is memory per open stream.
func encodedSizeHint(req *llm.Request) int {
	n := 768
	for i := range req.Tools {
		t := &req.Tools[i]
		n += len(t.Name) + len(t.Description) + len(t.Parameters) + 64
	}
	for i := range req.System {
		n += len(req.System[i].Text) + 64
	}
	for i := range req.Messages {
		n += 64
		for j := range req.Messages[i].Content {
			c := &req.Messages[i].Content[j]
			n += len(c.Text) + len(c.Thinking) + len(c.ThinkingSignature) + len(c.Data) + 64
		}
	}
	return n + n>>4
}
