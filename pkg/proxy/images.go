package proxy

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

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
	// The input images of an edit, under any of three names.
	InputReferences json.RawMessage `json:"input_references"`
	Images          json.RawMessage `json:"images"`
	Image           json.RawMessage `json:"image"`
}

// imageJob is a validated image request.
type imageJob struct {
	model       string
	prompt      string
	n           int
	size        string
	aspectRatio string
	// inputs are the input images of an edit, as data URLs.
	inputs []string
}

// imageRef is an input image as the upstream takes it.
type imageRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// upstreamBody is the JSON body of job for model: OpenRouter takes
// aspect_ratio, image_size and input_references of image_url objects; xAI
// an aspect ratio and a resolution class and its inputs as image or
// images; the other OpenAI-compatible bases a size and input_references.
func (job *imageJob) upstreamBody(model *llm.Model) ([]byte, error) {
	n := job.n
	if n == 0 {
		n = 1
	}
	v := map[string]any{"model": model.WireID(), "prompt": job.prompt, "n": n, "response_format": "b64_json"}
	if model.API == apiOpenRouterImages {
		if job.aspectRatio != "" {
			v["aspect_ratio"] = job.aspectRatio
		}
		if job.size != "" {
			v["image_size"] = job.size
		}
		if len(job.inputs) > 0 {
			type url struct {
				URL string `json:"url"`
			}
			type ref struct {
				Type     string `json:"type"`
				ImageURL url    `json:"image_url"`
			}
			refs := make([]ref, 0, len(job.inputs))
			for _, u := range job.inputs {
				refs = append(refs, ref{"image_url", url{u}})
			}
			v["input_references"] = refs
		}
		return json.Marshal(v)
	}
	refs := make([]imageRef, 0, len(job.inputs))
	for _, u := range job.inputs {
		refs = append(refs, imageRef{Type: "image_url", URL: u})
	}
	if model.Provider == "xai" || model.Provider == "xai-oauth" {
		v["aspect_ratio"] = cmp.Or(job.aspectRatio, "1:1")
		v["resolution"] = "2k"
		if job.size == "" || job.size == "1024x1024" {
			v["resolution"] = "1k"
		}
		switch {
		case len(refs) > 3:
			return nil, errorf(http.StatusBadRequest, model.Provider+" image edits accept up to 3 reference images; got "+strconv.Itoa(len(refs)))
		case len(refs) == 1:
			v["image"] = refs[0]
		case len(refs) > 1:
			v["images"] = refs
		}
	} else {
		if job.size != "" {
			v["size"] = job.size
		}
		if len(refs) > 0 {
			v["input_references"] = refs
		}
	}
	return json.Marshal(v)
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
	if err != nil {
		return err
	}
	job, err := decodeImageRequest(body, false)
	if err != nil {
		return err
	}
	return s.answerImages(w, r, m, c, job)
}

// imageEdits answers POST /v1/images/edits: a multipart form with image
// files, or JSON with input_references, images or image (base64 or data
// URLs).
func (s *Server) imageEdits(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "images")
	c := &call{inflight: s.inflight}
	defer c.recycle()
	var job *imageJob
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		var err error
		if job, err = s.readImageForm(w, r, c, params["boundary"]); err != nil {
			return err
		}
	} else {
		if err := requireJSON(r); err != nil {
			return err
		}
		body, err := s.readBody(w, r, c)
		if err != nil {
			return err
		}
		if job, err = decodeImageRequest(body, true); err != nil {
			return err
		}
	}
	return s.answerImages(w, r, m, c, job)
}

// answerImages sends an image job upstream and answers the images. An
// edit goes to /images/edits, and to /images/generations when the base
// has no edits endpoint (404).
func (s *Server) answerImages(w http.ResponseWriter, r *http.Request, m *media, c *call, job *imageJob) error {
	if err := s.resolveMedia(r, m, job.model, []string{apiImages, apiOpenRouterImages, llm.APIGoogle}, notImages); err != nil {
		return err
	}
	if m.model.API == llm.APIGoogle {
		return s.answerGeminiImages(w, r, m, c, job)
	}
	out, err := job.upstreamBody(m.model)
	if err != nil {
		return err
	}
	c.recycle()
	path := "/images/generations"
	switch {
	case m.model.API == apiOpenRouterImages:
		path = "/images"
	case len(job.inputs) > 0:
		path = "/images/edits"
	}
	send := func(path string) (*http.Response, error) {
		return s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
			return jsonRequest(s.mediaURL(m, path), out), nil
		})
	}
	resp, err := send(path)
	var ue *llm.UpstreamError
	if path == "/images/edits" && errors.As(err, &ue) && ue.Status == http.StatusNotFound {
		resp, err = send("/images/generations")
	}
	if err != nil {
		return err
	}
	var ans imageAnswer
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	u := llm.Usage{Input: ans.Usage.InputTokens, Output: ans.Usage.OutputTokens}.WithCost(m.model.Cost)
	s.observeMedia(r, m, u)
	images := make([]string, 0, len(ans.Data))
	for _, d := range ans.Data {
		images = append(images, d.B64JSON)
	}
	return s.writeImages(w, m, images, u)
}

// writeImages answers the images (base64) and the usage.
func (s *Server) writeImages(w http.ResponseWriter, m *media, images []string, u llm.Usage) error {
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
	}{Created: s.now().Unix(), Data: make([]image, 0, len(images)),
		Usage: usage{u.Input, u.Output, u.Input + u.Output, u.Cost.Total}}
	for _, b := range images {
		v.Data = append(v.Data, image{b})
	}
	return s.writeMediaJSON(w, m, v)
}

// notImages is the 400 text of a model the image route cannot serve.
func notImages(id string, model *llm.Model) string {
	switch model.API {
	case llm.APIOpenAIResponses, llm.APICodex:
		return "Model " + id + " requires a hosted image carrier, which the auth gateway cannot resolve"
	case llm.APIGeminiCLI:
		return "Model " + id + " uses api " + model.API + ", which the gateway does not serve for images"
	}
	return "Model " + id + " does not support image generation"
}

// decodeImageRequest validates a JSON image request as the reference does
// (base64 answers only, no streaming); an edit needs an input image.
func decodeImageRequest(body []byte, edit bool) (*imageJob, error) {
	var req imageRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid request body: "+err.Error())
	}
	switch {
	case req.Model == "":
		return nil, badImage("model must be a non-empty string")
	case req.Prompt == "":
		return nil, badImage("prompt must be a non-empty string")
	case string(req.Stream) == "true":
		return nil, badImage("streaming image responses are not supported")
	}
	job := &imageJob{model: req.Model, prompt: req.Prompt}
	if isSet(req.ResponseFormat) {
		var f string
		if json.Unmarshal(req.ResponseFormat, &f) != nil || f != "b64_json" {
			return nil, badImage(`response_format must be "b64_json"; URL responses are not supported`)
		}
	}
	str := func(raw json.RawMessage, name string, dst *string) error {
		if !isSet(raw) {
			return nil
		}
		if json.Unmarshal(raw, dst) != nil || *dst == "" {
			return badImage(name + " must be a non-empty string")
		}
		return nil
	}
	if err := str(req.AspectRatio, "aspect_ratio", &job.aspectRatio); err != nil {
		return nil, err
	}
	size, sizeName := req.Size, "size"
	if isSet(req.ImageSize) {
		size, sizeName = req.ImageSize, "image_size"
	}
	if err := str(size, sizeName, &job.size); err != nil {
		return nil, err
	}
	if isSet(req.N) {
		var n float64
		if json.Unmarshal(req.N, &n) != nil || n < 1 || n != math.Trunc(n) || n > 128 {
			return nil, badImage("n must be a positive integer")
		}
		job.n = int(n)
	}
	inputs := req.InputReferences
	if !isSet(inputs) {
		inputs = req.Images
	}
	if !isSet(inputs) {
		inputs = req.Image
	}
	if isSet(inputs) {
		var list []json.RawMessage
		if json.Unmarshal(inputs, &list) != nil {
			list = []json.RawMessage{inputs}
		}
		for _, raw := range list {
			u, err := imageInput(raw)
			if err != nil {
				return nil, err
			}
			job.inputs = append(job.inputs, u)
		}
	}
	if edit && len(job.inputs) == 0 {
		return nil, badImage("image edit requires at least one input image")
	}
	return job, nil
}

func badImage(msg string) error { return errorf(http.StatusBadRequest, "images: "+msg) }

// imageInput reads an input image (a data URL or base64 bytes, bare or as
// {url} or {image_url:{url}}) as a data URL.
func imageInput(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var obj struct {
			URL      *string `json:"url"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		_ = json.Unmarshal(raw, &obj)
		switch {
		case obj.URL != nil:
			s = *obj.URL
		case obj.ImageURL != nil:
			s = obj.ImageURL.URL
		}
	}
	switch {
	case s == "":
		return "", badImage("input image must be base64 or a data URL")
	case strings.HasPrefix(s, "data:") && strings.Contains(s, ";base64,"):
		return s, nil
	case isBase64(s):
		return "data:image/png;base64," + s, nil
	}
	return "", badImage("input image URLs are not supported; send a data URL or base64 bytes")
}

// isBase64 reports whether s is standard base64 (padded or not).
func isBase64(s string) bool {
	_, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	return err == nil
}

// readImageForm reads a multipart image edit: model, prompt, n, size and
// image / image[] files (held as data URLs within the body limit).
func (s *Server) readImageForm(w http.ResponseWriter, r *http.Request, c *call, boundary string) (*imageJob, error) {
	body, err := s.readBody(w, r, c)
	if err != nil {
		return nil, err
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	job := &imageJob{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Invalid request body: "+err.Error())
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Invalid request body: "+err.Error())
		}
		switch name := p.FormName(); name {
		case "model":
			job.model = string(v)
		case "prompt":
			job.prompt = string(v)
		case "size":
			job.size = string(v)
		case "response_format":
			if string(v) != "b64_json" {
				return nil, badImage(`response_format must be "b64_json"; URL responses are not supported`)
			}
		case "stream":
			if string(v) == "true" {
				return nil, badImage("streaming image responses are not supported")
			}
		case "n":
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 1 || n > 128 {
				return nil, badImage("n must be a positive integer")
			}
			job.n = n
		case "image", "image[]":
			if p.FileName() == "" {
				return nil, badImage("image must be a file part")
			}
			mt := cmp.Or(p.Header.Get("Content-Type"), "image/png")
			job.inputs = append(job.inputs, "data:"+mt+";base64,"+base64.StdEncoding.EncodeToString(v))
		}
	}
	switch {
	case job.model == "":
		return nil, badImage("model must be a non-empty string")
	case job.prompt == "":
		return nil, badImage("prompt must be a non-empty string")
	case len(job.inputs) == 0:
		return nil, badImage("image edit requires at least one image file")
	}
	return job, nil
}
