package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// embeddingsOK is the OpenAI embeddings answer of the fakes.
const embeddingsOK = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5]},{"object":"embedding","index":1,"embedding":[1,0]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":7,"total_tokens":7}}`

func TestEmbeddingsToOpenAI(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if r.URL.Path != "/v1/embeddings" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		if n == 0 {
			writeJSON(w, 429, nil, usageLimit429)
			return
		}
		writeJSON(w, 200, nil, embeddingsOK)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one"), apiKeyEntry(2, "openai", "sk-two")}}
	var mu sync.Mutex
	var seen []proxy.Observed
	gw := gateway(t, src, map[string]string{"openai": up.srv.URL + "/v1"}, nil, func(s *proxy.Server) {
		proxy.SetObserve(s, func(o proxy.Observed) { mu.Lock(); seen = append(seen, o); mu.Unlock() })
	})
	c := openaiClient(gw.URL)
	res, err := c.Embeddings.New(context.Background(), openaisdk.EmbeddingNewParams{
		Model: "openai/text-embedding-3-small",
		Input: openaisdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].Embedding[1] != -0.5 || res.Model != "openai/text-embedding-3-small" || res.Usage.PromptTokens != 7 {
		t.Errorf("answer %s", res.RawJSON())
	}
	// The usage-limited key failed over to its sibling, as chat does.
	if got := up.seen(); len(got) != 2 || got[0] == got[1] {
		t.Errorf("upstream credentials %q, want two different", got)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(up.bodies[1]), &sent); err != nil {
		t.Fatal(err)
	}
	if sent["model"] != "text-embedding-3-small" || sent["encoding_format"] != "float" {
		t.Errorf("upstream body %s", up.bodies[1])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Usage.Input != 7 || seen[0].Model != "text-embedding-3-small" || seen[0].CredentialID != 2 {
		t.Errorf("observed %+v", seen)
	}
	_, metrics := get(t, gw.URL+"/metrics", gatewayToken)
	if want := `omp_gateway_http_requests_total{format="embeddings",provider="openai",route="/v1/embeddings",status="200"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

func TestMediaErrors(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one"), apiKeyEntry(2, "deepinfra", "sk-di")}}
	gw := gateway(t, src, nil, nil)
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"chat route, embedding model", "/v1/chat/completions", `{"model":"openai/text-embedding-3-small","messages":[{"role":"user","content":"hi"}]}`, 400,
			`{"error":{"message":"Model openai/text-embedding-3-small is a embedding model; use POST /v1/embeddings","type":"invalid_request_error","param":null,"code":null}}`},
		{"messages route, stt model", "/v1/messages", `{"model":"whisper-1","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Model openai/whisper-1 is a stt model; use POST /v1/audio/transcriptions"}}`},
		{"embeddings, chat model", "/v1/embeddings", `{"model":"openai/gpt-4.1","input":"x"}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"Model openai/gpt-4.1 does not support embeddings"}}`},
		{"embeddings, empty input", "/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":[]}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"embeddings: input must be a non-empty string or array"}}`},
		{"embeddings, unknown model", "/v1/embeddings", `{"model":"nope","input":"x"}`, 404,
			`{"error":{"code":404,"type":"invalid_request_error","message":"Unknown model: nope"}}`},
		{"speech, image model", "/v1/audio/speech", `{"model":"deepinfra/black-forest-labs/FLUX-2-pro","input":"x"}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"Model deepinfra/black-forest-labs/FLUX-2-pro does not synthesize speech; use POST /v1/images/generations"}}`},
		{"images, hosted carrier", "/v1/images/generations", `{"model":"openai/gpt-image-1","prompt":"x"}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"Model openai/gpt-image-1 requires a hosted image carrier, which the auth gateway cannot resolve"}}`},
		{"images, url answers", "/v1/images", `{"model":"deepinfra/black-forest-labs/FLUX-2-pro","prompt":"x","response_format":"url"}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"images: response_format must be \"b64_json\"; URL responses are not supported"}}`},
		{"transcriptions, JSON without audio", "/v1/audio/transcriptions", `{"model":"openai/whisper-1"}`, 400,
			`{"error":{"code":400,"type":"invalid_request_error","message":"transcriptions: input_audio must be {data, format} with non-empty strings"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, gw.URL+tc.path, gatewayToken, tc.body)
			if body := readAll(t, resp); resp.StatusCode != tc.status || body != tc.want {
				t.Errorf("%d %s\nwant %d %s", resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
}

func TestModelsListKinds(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]any{}
	for _, row := range list.Data {
		kinds[row["id"].(string)] = row["kind"]
		if tools, ok := row["supports_tools"]; ok != (row["kind"] != nil) || ok && tools != false {
			t.Errorf("%s: supports_tools %v (kind %v)", row["id"], tools, row["kind"])
		}
	}
	for id, want := range map[string]any{"openai/gpt-4.1": nil, "openai/text-embedding-3-small": "embedding", "openai/whisper-1": "stt", "openai/gpt-image-1": "image"} {
		got, ok := kinds[id]
		if !ok || got != want {
			t.Errorf("%s: kind %v (listed %v), want %v", id, got, ok, want)
		}
	}
}

// TestSpeechStreamsThrough has the fake send its audio in chunks, each
// only after the client has received the one before: a gateway that held
// the answer back (to buffer it whole) would never deliver the first
// chunk, and the test fails at its deadline instead of passing.
func TestSpeechStreamsThrough(t *testing.T) {
	const chunk, chunks = 256 << 10, 16
	ack := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/openai/audio/speech" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		w.WriteHeader(200)
		for i := range chunks {
			_, _ = w.Write(bytes.Repeat([]byte{byte(i)}, chunk))
			w.(http.Flusher).Flush()
			select {
			case <-ack:
			case <-ctx.Done():
				return
			}
		}
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "deepinfra", "sk-di")}}
	gw := gateway(t, src, map[string]string{"deepinfra": up.srv.URL + "/v1/openai"}, nil)
	c := openaiClient(gw.URL)
	resp, err := c.Audio.Speech.New(ctx, openaisdk.AudioSpeechNewParams{
		Model: "deepinfra/hexgrad/Kokoro-82M", Input: "hello", Voice: openaisdk.AudioSpeechNewParamsVoiceUnion{OfString: openaisdk.String("af_bella")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "audio/mpeg" {
		t.Errorf("Content-Type %q", ct)
	}
	buf := make([]byte, chunk)
	for i := range chunks {
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if buf[0] != byte(i) || buf[chunk-1] != byte(i) {
			t.Fatalf("chunk %d holds %d", i, buf[0])
		}
		ack <- struct{}{}
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n != 0 {
		t.Errorf("%d bytes after the audio", n)
	}
}

func TestTranscriptionMultipart(t *testing.T) {
	audio := bytes.Repeat([]byte("RIFF"), 1000)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/audio/transcriptions" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeJSON(w, 200, nil, `{"text":"hello world","usage":{"type":"tokens","input_tokens":20,"output_tokens":3,"total_tokens":23}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, map[string]string{"openai": up.srv.URL + "/v1"}, nil)
	c := openaiClient(gw.URL)
	res, err := c.Audio.Transcriptions.New(context.Background(), openaisdk.AudioTranscriptionNewParams{
		Model: "openai/whisper-1", File: openaisdk.File(bytes.NewReader(audio), "clip.wav", "audio/wav"), Language: openaisdk.String("en"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "hello world" {
		t.Errorf("answer %s", res.RawJSON())
	}
	form := parseForm(t, up.bodies[0])
	if form["model"] != "whisper-1" || form["language"] != "en" || form["file"] != string(audio) || form["file.name"] != "clip.wav" {
		t.Errorf("upstream form model=%q language=%q file %d bytes name %q", form["model"], form["language"], len(form["file"]), form["file.name"])
	}
}

// parseForm reads a multipart body whose boundary is its first line.
func parseForm(t *testing.T, body string) map[string]string {
	t.Helper()
	first, _, _ := strings.Cut(body, "\r\n")
	mr := multipart.NewReader(strings.NewReader(body), strings.TrimPrefix(first, "--"))
	out := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		out[p.FormName()] = string(b)
		if p.FileName() != "" {
			out[p.FormName()+".name"] = p.FileName()
		}
	}
}

// TestTranscriptionUploadNotBuffered sends a 20 MiB upload from a
// generator (no copy of it exists in the test) and has the fake read the
// file part incrementally: the bytes allocated in the whole process while
// the request runs stay far below the upload's size, so no layer of the
// gateway held it in memory.
func TestTranscriptionUploadNotBuffered(t *testing.T) {
	const size = 20 << 20
	var got int64
	upstream := newStreamingUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if p.FormName() == "file" {
				got, _ = io.Copy(io.Discard, p)
			}
		}
		writeJSON(w, 200, nil, `{"text":"ok"}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, map[string]string{"openai": upstream + "/v1"}, nil)

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("model", "openai/whisper-1")
		part, _ := mw.CreateFormFile("file", "big.wav")
		_, err := io.Copy(part, io.LimitReader(pattern{}, size))
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/audio/transcriptions", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+gatewayToken)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 200 || !strings.Contains(body, `"text":"ok"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got != size {
		t.Errorf("upstream received %d file bytes, want %d", got, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("the request allocated %d bytes for a %d-byte upload", alloc, size)
	}
}

// pattern is an endless reader of a fixed byte pattern.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}

// newStreamingUpstream is a fake that reads the request body itself (the
// upstream type reads it whole first).
func newStreamingUpstream(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	up := newUpstream(t, nil)
	up.srv.Config.Handler = h
	return up.srv.URL
}

func TestTranscriptionTooLarge(t *testing.T) {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("model", "openai/whisper-1")
	part, _ := mw.CreateFormFile("file", "big.wav")
	_, _ = io.Copy(part, io.LimitReader(pattern{}, 25<<20+1))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/audio/transcriptions", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp)
	want := `{"error":{"code":413,"type":"invalid_request_error","message":"Request payload exceeds the 25 MB limit"}}`
	if resp.StatusCode != 413 || body != want {
		t.Errorf("%d %s, want 413 %s", resp.StatusCode, body, want)
	}
}

func TestTranscriptionWithoutSpoolRoom(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, nil, nil)
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	part, _ := mw.CreateFormFile("file", "a.wav")
	_, _ = part.Write([]byte("RIFF"))
	_ = mw.WriteField("model", "openai/whisper-1")
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/audio/transcriptions", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	want := `{"error":{"code":503,"type":"upstream_error","message":"The gateway has no room to hold the upload; retry later"}}`
	if resp.StatusCode != 503 || body != want {
		t.Errorf("%d %s\nwant 503 %s", resp.StatusCode, body, want)
	}
}

func TestSpeechToXAI(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/tts" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = io.WriteString(w, "RIFFwave")
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "xai", "xai-key")}}
	gw := gateway(t, src, map[string]string{"xai": up.srv.URL + "/v1"}, nil)
	resp := post(t, gw.URL+"/v1/audio/speech", gatewayToken, `{"model":"xai/grok-tts","input":"hello","response_format":"wav"}`)
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "RIFFwave" || resp.Header.Get("Content-Type") != "audio/wav" {
		t.Errorf("%d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	if want := `{"text":"hello","voice_id":"eve","output_format":{"codec":"wav","sample_rate":24000}}`; len(up.bodies) != 1 || up.bodies[0] != want {
		t.Errorf("upstream bodies %q, want %s", up.bodies, want)
	}
	resp = post(t, gw.URL+"/v1/audio/speech", gatewayToken, `{"model":"xai/grok-tts","input":"hello","speed":1.5}`)
	if want := `{"error":{"code":400,"type":"invalid_request_error","message":"xai-tts does not support speed"}}`; readAll(t, resp) != want {
		t.Errorf("speed on xai-tts: %d", resp.StatusCode)
	}
}
