package proxy

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// imageRequest is the OpenAI image generation request, as far as the
// gateway reads it.
type imageRequest struct {
	Model          string          `json:"model"`
	Prompt         string          `json:"prompt"`
	N              json.RawMessage `json:"n"`
	Size           json.RawMessage `json:"size"`
	ImageSize      json.RawMessage `json:"image_size"`
	AspectRatio    json.RawMessage `json:"aspect_ratio"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Stream         json.RawMessage `json:"stream"`
}

// imageUpstream is the body sent upstream.
type imageUpstream struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              int    `json:"n,omitempty"`
	Size           string `json:"size,omitempty"`
	AspectRatio    string `json:"aspect_ratio,omitempty"`
	ResponseFormat string `json:"response_format"`
}

// imageAnswer is the OpenAI images answer; only the base64 images and the
// usage are passed on.
type imageAnswer struct {
	Data []struct {
		B64JSON string `json:"b64_json"`
	} `json:"data"`
	Usage struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

// imageGenerations answers POST /v1/images/generations and its alias
// /v1/images (OpenAI images wire, base64 images only).
func (s *Server) imageGenerations(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "images")
	if err := requireJSON(r); err != nil {
		return err
	}
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBody(w, r, c)
	c.body = body
	if err != nil {
		return err
	}
	up, err := decodeImageRequest(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, up.Model, []string{apiImages}, notImages); err != nil {
		return err
	}
	up.Model = m.model.WireID()
	out, err := json.Marshal(up)
	if err != nil {
		return err
	}
	c.recycle()
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return jsonRequest(s.mediaURL(m, "/images/generations"), out), nil
	})
	if err != nil {
		return err
	}
	var ans imageAnswer
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	u := llm.Usage{Input: ans.Usage.InputTokens, Output: ans.Usage.OutputTokens}.WithCost(m.model.Cost)
	s.observeMedia(r, m, u)
	type image struct {
		B64JSON string `json:"b64_json"`
	}
	type usage struct {
		PromptTokens     int64   `json:"prompt_tokens"`
		CompletionTokens int64   `json:"completion_tokens"`
		TotalTokens      int64   `json:"total_tokens"`
		Cost             float64 `json:"cost"`
	}
	v := struct {
		Created int64   `json:"created"`
		Data    []image `json:"data"`
		Usage   usage   `json:"usage"`
	}{Created: s.now().Unix(), Data: make([]image, 0, len(ans.Data)),
		Usage: usage{u.Input, u.Output, u.Input + u.Output, u.Cost.Total}}
	for _, d := range ans.Data {
		v.Data = append(v.Data, image{d.B64JSON})
	}
	return s.writeMediaJSON(w, m, v)
}

// notImages is the 400 text of a model the image route cannot serve.
func notImages(id string, model *llm.Model) string {
	switch model.API {
	case llm.APIOpenAIResponses, llm.APICodex:
		return "Model " + id + " requires a hosted image carrier, which the auth gateway cannot resolve"
	case "openrouter-images", llm.APIGoogle, llm.APIGeminiCLI:
		return "Model " + id + " uses api " + model.API + ", which the gateway does not serve for images"
	}
	return "Model " + id + " does not support image generation"
}

// decodeImageRequest validates an image generation request as the
// reference does (base64 answers only, no streaming).
func decodeImageRequest(body []byte) (*imageUpstream, error) {
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "images: "+msg) }
	var req imageRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid request body: "+err.Error())
	}
	switch {
	case req.Model == "":
		return nil, bad("model must be a non-empty string")
	case req.Prompt == "":
		return nil, bad("prompt must be a non-empty string")
	case string(req.Stream) == "true":
		return nil, bad("streaming image responses are not supported")
	}
	up := &imageUpstream{Model: req.Model, Prompt: req.Prompt, ResponseFormat: "b64_json"}
	if isSet(req.ResponseFormat) {
		var f string
		if json.Unmarshal(req.ResponseFormat, &f) != nil || f != "b64_json" {
			return nil, bad(`response_format must be "b64_json"; URL responses are not supported`)
		}
	}
	str := func(raw json.RawMessage, name string, dst *string) error {
		if !isSet(raw) {
			return nil
		}
		if json.Unmarshal(raw, dst) != nil || *dst == "" {
			return bad(name + " must be a non-empty string")
		}
		return nil
	}
	if err := str(req.AspectRatio, "aspect_ratio", &up.AspectRatio); err != nil {
		return nil, err
	}
	size, sizeName := req.Size, "size"
	if isSet(req.ImageSize) {
		size, sizeName = req.ImageSize, "image_size"
	}
	if err := str(size, sizeName, &up.Size); err != nil {
		return nil, err
	}
	if isSet(req.N) {
		var n float64
		if json.Unmarshal(req.N, &n) != nil || n < 1 || n != math.Trunc(n) || n > 128 {
			return nil, bad("n must be a positive integer")
		}
		up.N = int(n)
	}
	return up, nil
}
