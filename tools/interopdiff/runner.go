package interopdiff

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CapabilitiesHeader is what an 18.1.21 client sends on snapshot and
// stream requests; any value of it opens the 18.1.21 fields and blocks (the
// E1 and F1 gates).
const (
	CapabilitiesHeader = "OMP-Auth-Broker-Capabilities"
	capabilitiesValue  = "codex-meter-block-scopes"
)

// Target is one running broker under test with its own fake token endpoint.
type Target struct {
	Name   string // "reference" or "ours"
	URL    string
	Token  string
	Fake   *TokenServer
	Client *http.Client
}

// Step is one request of a sequence (or, with Upstream, a look at what the
// target's fake token endpoint received since the previous step).
type Step struct {
	Method string // default: POST with a Body, else GET
	// Path may hold {id1}…{id9}: the n-th credential id this sequence has
	// seen on the target.
	Path string
	// Body is sent as is after expanding {tokenUrl} (the target's fake token
	// endpoint), {far} (an expiry in 2100) and {big} (1.5 MiB of filler).
	Body   string
	Caps   bool // send the capabilities header
	NoAuth bool // send no bearer token
	// Header is sent as is (e.g. If-None-Match).
	Header map[string]string
	Stream bool // read only the first SSE frame
	// Upstream compares the fake token endpoint's log instead of a reply.
	Upstream bool
	// Accept names the decisions (Accepted keys) that may explain a
	// difference in this step.
	Accept []string
}

// Sequence is a named list of steps run against a fresh view: every
// credential left active by the previous sequence is disabled first.
type Sequence struct {
	Name  string
	Steps []Step
}

// Result is one step's normalised outcome.
type Result struct {
	Status int    `json:"status"`
	Type   string `json:"type,omitempty"` // media type of the reply
	// Header holds the reply's comparedHeaders that were present (ETag
	// normalised like a generation).
	Header map[string]string `json:"header,omitempty"`
	Body   any               `json:"body,omitempty"`
}

// comparedHeaders are the reply headers clients or proxies act on.
var comparedHeaders = []string{"Cache-Control", "ETag", "Vary", "X-Accel-Buffering"}

var etagGeneration = regexp.MustCompile(`^"\d+"$`)

func pickHeaders(h http.Header) map[string]string {
	var out map[string]string
	for _, k := range comparedHeaders {
		v := h.Get(k)
		if v == "" {
			continue
		}
		if k == "ETag" && etagGeneration.MatchString(v) {
			v = `"<generation>"`
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// FarExpiry is the fixed expiry of uploaded credentials (2100-01-01), far
// from any refresher skew.
const FarExpiry = "4102444800000"

// inMinutes is the {in<N>m} placeholder: now + N minutes in epoch ms
// (block deadlines, observed-usage times).
var inMinutes = regexp.MustCompile(`\{in(\d+)m\}`)

func expand(s, tokenURL string) string {
	if strings.Contains(s, "{big}") {
		s = strings.ReplaceAll(s, "{big}", strings.Repeat("x", 3<<19))
	}
	s = inMinutes.ReplaceAllStringFunc(s, func(m string) string {
		n, _ := strconv.Atoi(inMinutes.FindStringSubmatch(m)[1])
		return strconv.FormatInt(time.Now().Add(time.Duration(n)*time.Minute).UnixMilli(), 10)
	})
	return strings.NewReplacer("{tokenUrl}", tokenURL, "{far}", FarExpiry).Replace(s)
}

// Run replays seq against t and returns one Result per step.
func (t *Target) Run(ctx context.Context, seq Sequence) []Result {
	ids := newIDMap()
	t.Fake.Take()
	out := make([]Result, 0, len(seq.Steps))
	for _, st := range seq.Steps {
		n := &normaliser{ids: ids, now: time.Now(), tokenURL: t.Fake.URL}
		if st.Upstream {
			var v any
			b, _ := json.Marshal(t.Fake.Take())
			_ = json.Unmarshal(b, &v)
			out = append(out, Result{Status: 0, Body: n.value("", v)})
			continue
		}
		out = append(out, t.do(ctx, st, ids, n))
	}
	return out
}

func (t *Target) do(ctx context.Context, st Step, ids *idMap, n *normaliser) Result {
	path := idTemplate.ReplaceAllStringFunc(st.Path, func(m string) string {
		k, _ := strconv.Atoi(m[3 : len(m)-1])
		return strconv.FormatInt(ids.id(k), 10)
	})
	method := st.Method
	if method == "" {
		method = http.MethodGet
		if st.Body != "" {
			method = http.MethodPost
		}
	}
	timeout := 30 * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if st.Body != "" {
		body = strings.NewReader(expand(st.Body, t.Fake.URL))
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL+path, body)
	if err != nil {
		return Result{Status: -1, Body: err.Error()}
	}
	if !st.NoAuth {
		req.Header.Set("Authorization", "Bearer "+t.Token)
	}
	if st.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if st.Caps {
		req.Header.Set(CapabilitiesHeader, capabilitiesValue)
	}
	for k, v := range st.Header {
		req.Header.Set(k, v)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		return Result{Status: -1, Body: "request failed: " + n.text(err.Error())}
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	res := Result{Status: resp.StatusCode, Type: mt, Header: pickHeaders(resp.Header)}
	var raw []byte
	if st.Stream && mt == "text/event-stream" {
		ev, data, err := firstFrame(resp.Body)
		if err != nil {
			res.Body = "stream: " + err.Error()
			return res
		}
		var v any
		if json.Unmarshal([]byte(data), &v) != nil {
			v = data
		}
		res.Body = map[string]any{"event": ev, "data": n.value("", v)}
		return res
	}
	raw, _ = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if len(raw) == 0 {
		return res
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		res.Body = "non-JSON: " + n.text(string(raw))
		return res
	}
	res.Body = n.value("", v)
	return res
}

// firstFrame reads one SSE event (skipping comments) and returns its event
// name and data.
func firstFrame(r io.Reader) (event, data string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if event != "" || len(lines) > 0 {
				return event, strings.Join(lines, "\n"), nil
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		default:
			return "", "", fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", io.ErrUnexpectedEOF
}

// Reset disables every active credential of t (so the next sequence starts
// from an empty view) and clears the fake's log.
func (t *Target) Reset(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.URL+"/v1/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+t.Token)
	resp, err := t.Client.Do(req)
	if err != nil {
		return err
	}
	var snap struct {
		Credentials []struct {
			ID int64 `json:"id"`
		} `json:"credentials"`
	}
	err = json.NewDecoder(resp.Body).Decode(&snap)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("%s snapshot: %w", t.Name, err)
	}
	for _, c := range snap.Credentials {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/v1/credential/%d/disable", t.URL, c.ID),
			strings.NewReader(`{"cause":"interopdiff reset"}`))
		req.Header.Set("Authorization", "Bearer "+t.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := t.Client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Fake.Take()
	return nil
}
