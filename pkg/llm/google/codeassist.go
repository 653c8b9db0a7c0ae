package google

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
)

// Code Assist endpoints (reference google-gemini-cli.ts).
const (
	// DefaultCodeAssistURL is the Gemini-CLI Code Assist root.
	DefaultCodeAssistURL = provider.CodeAssistURL
	// AntigravityURL is the Antigravity root tried first.
	AntigravityURL = provider.AntigravityURL
	// AntigravitySandboxURL is the Antigravity fallback root.
	AntigravitySandboxURL = provider.AntigravitySandboxURL
)

// Client identities sent by the reference.
const (
	DefaultGeminiCLIVersion   = provider.GeminiCLIVersion
	DefaultAntigravityVersion = provider.AntigravityVersion
	claudeThinkingBeta        = provider.AnthropicBetasAntigravityThinking
)

// CodeAssist is the upstream Provider of the Cloud Code Assist endpoint
// (v1internal:streamGenerateContent?alt=sse) used with Gemini-CLI and
// Antigravity OAuth credentials: Bearer access token plus the credential's
// Google Cloud project id.
type CodeAssist struct {
	// BaseURL overrides the endpoint root (default DefaultCodeAssistURL;
	// for Antigravity AntigravityURL, failing over to
	// AntigravitySandboxURL on transport errors and 408/429/5xx).
	BaseURL string
	// Antigravity forces the Antigravity flavour (envelope, headers, tool
	// schema dialect). It is also chosen for models of the
	// "google-antigravity" provider.
	Antigravity bool
	// GeminiCLIVersion and AntigravityVersion set the User-Agent versions
	// (defaults DefaultGeminiCLIVersion, DefaultAntigravityVersion).
	GeminiCLIVersion   string
	AntigravityVersion string
	// Client, Now and NewID are as on Gemini.
	Client *http.Client
	Now    func() time.Time
	NewID  func() string
}

var _ llm.Provider = (*CodeAssist)(nil)

// ErrNoProject reports a Code Assist credential without a project id.
var ErrNoProject = errors.New("google: Code Assist credential has no project id")

// Stream sends the request wrapped as {model, project, request} and
// returns the canonical event stream of the unwrapped {response} chunks.
func (p *CodeAssist) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	uc, err := p.prepare(req, model, &cred)
	if err != nil {
		return nil, err
	}
	return uc.open(ctx, model)
}

// prepare builds the wrapped call of req, with the endpoints to try.
func (p *CodeAssist) prepare(req *llm.Request, model *llm.Model, cred *llm.Credential) (*upstreamCall, error) {
	if cred.ProjectID == "" {
		return nil, ErrNoProject
	}
	antigravity := p.Antigravity || model.Provider == "google-antigravity"
	target := Target{CodeAssist: true, Antigravity: antigravity}
	body, err := BuildRequest(req, *model, target)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	env := codeAssistRequest{Model: model.WireID(), Project: cred.ProjectID, Request: body}
	if antigravity {
		antigravityEnvelope(&env, req, *model, now())
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+cred.Secret)
	if antigravity {
		h.Set("User-Agent", p.antigravityUA())
		if traitsFor(*model, target).claude && model.Reasoning {
			h.Set("anthropic-beta", claudeThinkingBeta)
		}
	} else {
		h.Set("User-Agent", p.geminiCLIUA(model.WireID()))
		h.Set("Client-Metadata", "ideType=IDE_UNSPECIFIED,platform=PLATFORM_UNSPECIFIED,pluginType=GEMINI")
	}
	for k, v := range model.Headers {
		h.Set(k, v)
	}
	bases := []string{firstNonEmpty(p.BaseURL, DefaultCodeAssistURL)}
	if antigravity && strings.TrimSpace(p.BaseURL) == "" {
		bases = []string{AntigravityURL, AntigravitySandboxURL}
	}
	endpoints := make([]string, len(bases))
	for i, base := range bases {
		endpoints[i] = strings.TrimRight(base, "/") + "/v1internal:streamGenerateContent?alt=sse"
	}
	return &upstreamCall{
		c:         caller{client: p.Client, now: now, provider: model.Provider},
		endpoints: endpoints,
		header:    h,
		raw:       env.appendJSON(make([]byte, 0, 4096)),
		api:       model.API,
		opts:      DecoderOptions{CodeAssist: true, Request: body, NewID: p.NewID, Price: model.Cost},
	}, nil
}

// appendJSON encodes the envelope around the request body.
func (e *codeAssistRequest) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonw.Plain(dst, e.Model)
	dst = append(dst, `,"project":`...)
	dst = jsonw.Plain(dst, e.Project)
	dst = append(dst, `,"request":`...)
	dst = e.Request.AppendJSON(dst)
	for _, f := range [...]struct{ k, v string }{{"requestId", e.RequestID}, {"userAgent", e.UserAgent}, {"requestType", e.RequestType}} {
		if f.v != "" {
			dst = append(dst, ',', '"')
			dst = append(dst, f.k...)
			dst = append(dst, '"', ':')
			dst = jsonw.Plain(dst, f.v)
		}
	}
	return append(dst, '}')
}

// transient reports a failure worth trying on the next endpoint.
func transient(err error) bool {
	var ue *llm.UpstreamError
	if !errors.As(err, &ue) {
		return false
	}
	return ue.Status == 0 || ue.Status == 408 || ue.Status == 429 || ue.Status >= 500
}

func (p *CodeAssist) geminiCLIUA(modelID string) string {
	v := firstNonEmpty(p.GeminiCLIVersion, DefaultGeminiCLIVersion)
	goos, arch := runtime.GOOS, runtime.GOARCH
	if goos == "windows" {
		goos = "win32"
	}
	if arch == "amd64" {
		arch = "x64"
	}
	return "GeminiCLI/" + v + "/" + modelID + " (" + goos + "; " + arch + "; terminal)"
}

// antigravityUA is pinned to the darwin/arm64 client the reference
// captured; the backend gates models on the version only.
func (p *CodeAssist) antigravityUA() string {
	v := firstNonEmpty(p.AntigravityVersion, DefaultAntigravityVersion)
	return provider.AntigravityUserAgentVersion(v)
}

// antigravityEnvelope fills the request identity the Antigravity client
// sends: requestId agent/<agent>/<ms>/<trajectory>/<step>, a signed
// decimal session id, labels, userAgent and requestType.
func antigravityEnvelope(env *codeAssistRequest, req *llm.Request, model llm.Model, now time.Time) {
	agent, trajectory := uuid4(), uuid4()
	const step = 2
	env.RequestID = "agent/" + agent + "/" + strconv.FormatInt(now.UnixMilli(), 10) + "/" + trajectory + "/" + strconv.Itoa(step)
	env.UserAgent = "antigravity"
	env.RequestType = "agent"
	claude := strings.HasPrefix(model.WireID(), "claude-")
	labels := map[string]string{
		"last_step_index":          strconv.Itoa(step - 1),
		"trajectory_id":            trajectory,
		"used_claude":              strconv.FormatBool(claude),
		"used_claude_conservative": strconv.FormatBool(claude),
	}
	if p, ok := antigravityProfiles[model.WireID()]; ok && p.modelEnum != "" {
		labels["model_enum"] = p.modelEnum
	}
	env.Request.Labels = labels
	env.Request.SessionID = antigravitySessionID(req)
}

// antigravitySessionID derives "-<int63>" from the session id or the first
// user text, so a conversation keeps one id; random when neither exists.
func antigravitySessionID(req *llm.Request) string {
	seed := req.SessionID
	if seed == "" {
	outer:
		for i := range req.Messages {
			if req.Messages[i].Role != llm.RoleUser {
				continue
			}
			for _, c := range req.Messages[i].Content {
				if c.Type == llm.ContentText {
					seed = c.Text
					break outer
				}
			}
			break
		}
	}
	var v uint64
	if strings.TrimSpace(seed) != "" {
		sum := sha256.Sum256([]byte(seed))
		v = binary.BigEndian.Uint64(sum[:8])
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		v = binary.BigEndian.Uint64(b[:]) % 9_000_000_000_000_000_000
	}
	return "-" + strconv.FormatUint(v&(1<<63-1), 10)
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
