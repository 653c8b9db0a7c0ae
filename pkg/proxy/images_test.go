package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/ompgo/omp/pkg/vault"
)

// The image routes against fakes of the OpenAI-compatible, xAI, OpenRouter
// and Gemini image wires.

func TestImageGeneration(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/openai/images/generations" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeJSON(w, 200, nil, `{"created":1,"data":[{"b64_json":"aW1n","revised_prompt":"p"}],"usage":{"input_tokens":3,"output_tokens":9,"total_tokens":12}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "deepinfra", "sk-di")}}
	gw := gateway(t, src, map[string]string{"deepinfra": up.srv.URL + "/v1/openai"}, nil)
	c := openaiClient(gw.URL)
	res, err := c.Images.Generate(context.Background(), openaisdk.ImageGenerateParams{
		Model: "deepinfra/black-forest-labs/FLUX-2-pro", Prompt: "a cat", N: openaisdk.Int(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 1 || res.Data[0].B64JSON != "aW1n" || res.Usage.TotalTokens != 12 {
		t.Errorf("answer %s", res.RawJSON())
	}
	if got := up.seen(); len(got) != 1 || got[0] != "sk-di" {
		t.Errorf("upstream credentials %q", got)
	}
	if !strings.Contains(up.bodies[0], `"model":"black-forest-labs/FLUX-2-pro"`) || !strings.Contains(up.bodies[0], `"response_format":"b64_json"`) {
		t.Errorf("upstream body %s", up.bodies[0])
	}
}

func TestImageEdits(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n == 0 && r.URL.Path == "/v1/images/edits" {
			writeJSON(w, 404, nil, `{"error":{"message":"no edits here"}}`)
			return
		}
		writeJSON(w, 200, nil, `{"data":[{"b64_json":"ZWRpdA=="}]}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "xai", "xai-key")}}
	gw := gateway(t, src, map[string]string{"xai": up.srv.URL + "/v1"}, nil)
	c := openaiClient(gw.URL)
	// The SDK sends a multipart form; xAI takes one reference image as
	// "image", and a base without /images/edits gets the generation route.
	res, err := c.Images.Edit(context.Background(), openaisdk.ImageEditParams{
		Model: "xai/grok-imagine-image", Prompt: "add a hat",
		Image: openaisdk.ImageEditParamsImageUnion{OfFile: openaisdk.File(bytes.NewReader([]byte("PNGDATA")), "in.png", "image/png")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 1 || res.Data[0].B64JSON != "ZWRpdA==" {
		t.Errorf("answer %s", res.RawJSON())
	}
	if len(up.bodies) != 2 || up.bodies[0] != up.bodies[1] {
		t.Fatalf("upstream bodies %q", up.bodies)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(up.bodies[0]), &sent); err != nil {
		t.Fatal(err)
	}
	img, _ := sent["image"].(map[string]any)
	if sent["model"] != "grok-imagine-image" || sent["aspect_ratio"] != "1:1" || sent["resolution"] != "1k" ||
		img["type"] != "image_url" || img["url"] != "data:image/png;base64,UE5HREFUQQ==" {
		t.Errorf("upstream body %s", up.bodies[0])
	}
	resp := post(t, gw.URL+"/v1/images/edits", gatewayToken, `{"model":"xai/grok-imagine-image","prompt":"x"}`)
	want := `{"error":{"code":400,"type":"invalid_request_error","message":"images: image edit requires at least one input image"}}`
	if body := readAll(t, resp); resp.StatusCode != 400 || body != want {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

func TestImageGenerationWithGemini(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1beta/models/gemini-2.5-flash-image:generateContent" || r.Header.Get("x-goog-api-key") != "AIza-key" {
			t.Errorf("upstream %s key %q", r.URL.Path, r.Header.Get("x-goog-api-key"))
		}
		writeJSON(w, 200, nil, `{"candidates":[{"content":{"parts":[{"text":"here"},{"inlineData":{"mimeType":"image/png","data":"Z2VtaW5p"}}]}}],"usageMetadata":{"promptTokenCount":6,"candidatesTokenCount":1290}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "google", "AIza-key")}}
	gw := gateway(t, src, map[string]string{"google": up.srv.URL + "/v1beta"}, nil)
	resp := post(t, gw.URL+"/v1/images/generations", gatewayToken, `{"model":"google/gemini-2.5-flash-image","prompt":"a kite","aspect_ratio":"16:9"}`)
	var ans struct {
		Data []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	body := readAll(t, resp)
	if err := json.Unmarshal([]byte(body), &ans); err != nil || resp.StatusCode != 200 || len(ans.Data) != 1 || ans.Data[0].B64JSON != "Z2VtaW5p" || ans.Usage.TotalTokens != 1296 {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"a kite"}]}],"generationConfig":{"responseModalities":["IMAGE"],"imageConfig":{"aspectRatio":"16:9"}}}`
	if len(up.bodies) != 1 || up.bodies[0] != want {
		t.Errorf("upstream bodies %q\nwant %s", up.bodies, want)
	}
}

func TestImageGenerationWithOpenRouter(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/api/v1/images" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeJSON(w, 200, nil, `{"data":[{"b64_json":"b3I="}],"usage":{"input_tokens":4,"output_tokens":1000}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openrouter", "sk-or")}}
	gw := gateway(t, src, map[string]string{"openrouter": up.srv.URL + "/api/v1"}, nil)
	resp := post(t, gw.URL+"/v1/images/edits", gatewayToken, `{"model":"openrouter/black-forest-labs/flux.2-flex","prompt":"brighter","image":"aGk=","aspect_ratio":"1:1"}`)
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"data":[{"b64_json":"b3I="}]`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	want := `{"aspect_ratio":"1:1","input_references":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}],"model":"black-forest-labs/flux.2-flex","n":1,"prompt":"brighter","response_format":"b64_json"}`
	if len(up.bodies) != 1 || up.bodies[0] != want {
		t.Errorf("upstream bodies %q\nwant %s", up.bodies, want)
	}
}
