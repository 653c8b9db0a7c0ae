package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
)

// The non-chat routes through the real broker and gateway: the fake OpenAI
// API (embeddings, transcriptions) and the fake DeepInfra OpenAI-compatible
// base (images, speech) answer with the OpenAI wire shapes.

var (
	openaiMediaWire    = wire{"openai", "/v1", "POST /v1/{path...}"}
	deepinfraMediaWire = wire{"deepinfra", "/v1/openai", "POST /v1/openai/{path...}"}
)

const (
	openaiMediaKey = "sk-proj-e2e-media"
	deepinfraKey   = "di-e2e-media"
)

// mediaStack is a broker holding an OpenAI and a DeepInfra API key and a
// gateway whose two providers point at their fakes (more may be added to
// urls before the stack starts).
func mediaStack(t *testing.T, openai, deepinfra *fakeUpstream, extra map[string]string) *stack {
	t.Helper()
	dir := t.TempDir()
	b := startBroker(t, openai, dir, "127.0.0.1:0")
	gm, token := startGateway(t, openai, b, filepath.Join(dir, "gw"), func(c *gateway.Config) {
		c.URLs = func(provider, kind string) string {
			if base, ok := extra[provider]; ok && kind == "baseUrl" {
				return base
			}
			if u := deepinfra.urls(provider, kind); u != "" {
				return u
			}
			return openai.urls(provider, kind)
		}
	})
	s := &stack{fake: openai, broker: b.client(), gw: gm, gwURL: gm.URL(), token: token}
	s.upload(t, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: openaiMediaKey}, 1)
	s.upload(t, "deepinfra", vault.Credential{Type: vault.TypeAPIKey, Key: deepinfraKey}, 1)
	return s
}

func TestModalityRoutesWithTheOpenAISDK(t *testing.T) {
	audio := bytes.Repeat([]byte("ID3\x04"), 4096)
	openai := newUpstream(t, openaiMediaWire, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		switch r.URL.Path {
		case "/v1/embeddings":
			writeJSON(w, 200, nil, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25,-1]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":4,"total_tokens":4}}`)
		case "/v1/audio/transcriptions":
			writeJSON(w, 200, nil, `{"text":"the quick brown fox","usage":{"type":"tokens","input_tokens":50,"output_tokens":5,"total_tokens":55}}`)
		default:
			http.NotFound(w, r)
		}
	})
	deepinfra := newUpstream(t, deepinfraMediaWire, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		switch r.URL.Path {
		case "/v1/openai/images/generations":
			writeJSON(w, 200, nil, `{"created":1700000000,"data":[{"b64_json":"iVBORw0KGgo="}]}`)
		case "/v1/openai/audio/speech":
			w.Header().Set("Content-Type", "audio/mpeg")
			_, _ = w.Write(audio)
		default:
			http.NotFound(w, r)
		}
	})
	s := mediaStack(t, openai, deepinfra, nil)
	c := openaiClient(s)
	ctx := context.Background()

	emb, err := c.Embeddings.New(ctx, openaisdk.EmbeddingNewParams{
		Model: "openai/text-embedding-3-small", Input: openaisdk.EmbeddingNewParamsInputUnion{OfString: openaisdk.String("hello")},
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) != 3 || emb.Usage.PromptTokens != 4 {
		t.Errorf("embeddings %s", emb.RawJSON())
	}

	img, err := c.Images.Generate(ctx, openaisdk.ImageGenerateParams{Model: "deepinfra/black-forest-labs/FLUX-2-pro", Prompt: "a lighthouse"})
	if err != nil {
		t.Fatalf("images: %v", err)
	}
	if len(img.Data) != 1 || img.Data[0].B64JSON != "iVBORw0KGgo=" {
		t.Errorf("images %s", img.RawJSON())
	}

	sp, err := c.Audio.Speech.New(ctx, openaisdk.AudioSpeechNewParams{
		Model: "deepinfra/hexgrad/Kokoro-82M", Input: "hello there", Voice: openaisdk.AudioSpeechNewParamsVoiceUnion{OfString: openaisdk.String("af_bella")},
	})
	if err != nil {
		t.Fatalf("speech: %v", err)
	}
	got, err := io.ReadAll(sp.Body)
	sp.Body.Close()
	if err != nil || !bytes.Equal(got, audio) || sp.Header.Get("Content-Type") != "audio/mpeg" {
		t.Errorf("speech: %d bytes (%v), Content-Type %q; want the upstream's %d", len(got), err, sp.Header.Get("Content-Type"), len(audio))
	}

	tr, err := c.Audio.Transcriptions.New(ctx, openaisdk.AudioTranscriptionNewParams{
		Model: "openai/whisper-1", File: openaisdk.File(bytes.NewReader(audio), "memo.mp3", "audio/mpeg"),
	})
	if err != nil {
		t.Fatalf("transcription: %v", err)
	}
	if tr.Text != "the quick brown fox" {
		t.Errorf("transcription %s", tr.RawJSON())
	}

	// Each upstream saw the broker's key for its provider, never the
	// gateway's token, and the model's upstream id.
	for _, f := range []*fakeUpstream{openai, deepinfra} {
		want := map[string]string{"openai": openaiMediaKey, "deepinfra": deepinfraKey}[f.wire.provider]
		for i, r := range f.requests() {
			if r.key != want {
				t.Errorf("%s request %d (%s) used key %q, want %q", f.wire.provider, i, r.uri, r.key, want)
			}
			s.checkNoLeak(t, i, r)
		}
	}
	reqs := openai.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].body, `"model":"text-embedding-3-small"`) {
		t.Fatalf("openai requests %+v", reqs)
	}
	_, params, _ := mime.ParseMediaType(reqs[1].header.Get("Content-Type"))
	mr := multipart.NewReader(strings.NewReader(reqs[1].body), params["boundary"])
	form := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(p)
		form[p.FormName()] = string(b)
	}
	if form["model"] != "whisper-1" || form["file"] != string(audio) {
		t.Errorf("transcription upload: model %q, file %d bytes", form["model"], len(form["file"]))
	}
}

// TestLargeAudioIsStreamed moves 32 MiB of speech and a 20 MiB upload
// through the gateway. The speech fake writes its next chunk only after
// the client has read the one before, so a gateway that buffered the
// answer would stall it (and the test fails at its deadline); the
// transcription fake reads the upload part by part, and the bytes the
// whole process allocates while the upload runs stay far below its size.
func TestLargeAudioIsStreamed(t *testing.T) {
	const chunk, chunks = 1 << 20, 32
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ack := make(chan struct{})
	deepinfra := newUpstream(t, deepinfraMediaWire, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		w.Header().Set("Content-Type", "audio/wav")
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
	var received int64
	incremental := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if p.FormName() == "file" {
				received, _ = io.Copy(io.Discard, p)
			}
		}
		writeJSON(w, 200, nil, `{"text":"long"}`)
	}))
	t.Cleanup(incremental.Close)
	openai := newUpstream(t, openaiMediaWire, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		http.NotFound(w, r)
	})
	s := mediaStack(t, openai, deepinfra, map[string]string{"openai": incremental.URL + "/v1"})

	body, _ := json.Marshal(map[string]string{"model": "deepinfra/hexgrad/Kokoro-82M", "input": "a long story", "response_format": "wav"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.gwURL+"/v1/audio/speech", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, chunk)
	for i := range chunks {
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("speech chunk %d: %v", i, err)
		}
		if buf[0] != byte(i) || buf[chunk-1] != byte(i) {
			t.Fatalf("speech chunk %d holds %d", i, buf[0])
		}
		ack <- struct{}{}
	}
	resp.Body.Close()

	const size = 20 << 20
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, _ := mw.CreateFormFile("file", "long.wav")
		_, err := io.Copy(part, io.LimitReader(zeros{}, size))
		if err == nil {
			err = mw.WriteField("model", "openai/whisper-1")
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.gwURL+"/v1/audio/transcriptions", pr)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 200 || !strings.Contains(string(answer), `"text":"long"`) {
		t.Fatalf("transcription %d %s", resp.StatusCode, answer)
	}
	if received != size {
		t.Errorf("upstream received %d file bytes, want %d", received, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("the upload allocated %d bytes in the process for a %d-byte file", alloc, size)
	}
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
