package proxy

import (
	"encoding/json"
	"net/http"
	neturl "net/url"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// answerGeminiImages generates the images of job with a Gemini model
// (generateContent asking for image output, the key in x-goog-api-key).
func (s *Server) answerGeminiImages(w http.ResponseWriter, r *http.Request, m *media, c *call, job *imageJob) error {
	type blob struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	type part struct {
		InlineData *blob  `json:"inlineData,omitempty"`
		Text       string `json:"text,omitempty"`
	}
	type imageConfig struct {
		AspectRatio string `json:"aspectRatio,omitempty"`
		ImageSize   string `json:"imageSize,omitempty"`
	}
	type generationConfig struct {
		ResponseModalities []string     `json:"responseModalities"`
		ImageConfig        *imageConfig `json:"imageConfig,omitempty"`
		CandidateCount     int          `json:"candidateCount,omitempty"`
	}
	type content struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	parts := make([]part, 0, len(job.inputs)+1)
	for _, u := range job.inputs {
		meta, data, _ := strings.Cut(strings.TrimPrefix(u, "data:"), ";base64,")
		parts = append(parts, part{InlineData: &blob{MimeType: meta, Data: data}})
	}
	parts = append(parts, part{Text: job.prompt})
	gc := generationConfig{ResponseModalities: []string{"IMAGE"}, CandidateCount: job.n}
	if job.aspectRatio != "" || job.size != "" {
		gc.ImageConfig = &imageConfig{AspectRatio: job.aspectRatio, ImageSize: job.size}
	}
	out, err := json.Marshal(struct {
		Contents         []content        `json:"contents"`
		GenerationConfig generationConfig `json:"generationConfig"`
	}{[]content{{Role: "user", Parts: parts}}, gc})
	if err != nil {
		return err
	}
	c.recycle()
	url := s.mediaURL(m, "/models/"+neturl.PathEscape(m.model.WireID())+":generateContent")
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		req := jsonRequest(url, out)
		req.KeyHeader = "x-goog-api-key"
		return req, nil
	})
	if err != nil {
		return err
	}
	var ans struct {
		Candidates []struct {
			Content struct {
				Parts []part `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
		UsageMetadata struct {
			PromptTokenCount     int64 `json:"promptTokenCount"`
			CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	var images []string
	for _, cand := range ans.Candidates {
		for _, p := range cand.Content.Parts {
			if p.InlineData != nil && p.InlineData.Data != "" {
				images = append(images, p.InlineData.Data)
			}
		}
	}
	u := llm.Usage{Input: ans.UsageMetadata.PromptTokenCount, Output: ans.UsageMetadata.CandidatesTokenCount}.WithCost(m.model.Cost)
	s.observeMedia(r, m, u)
	return s.writeImages(w, m, images, u)
}
