package proxy

import (
	"encoding/json"
	"net/http"
	neturl "net/url"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/google"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// answerGeminiImages generates the images of job with a Gemini model
// (generateContent asking for image output, the key in x-goog-api-key).
func (s *Server) answerGeminiImages(w http.ResponseWriter, r *http.Request, m *media, c *call, job *imageJob) error {
	type imageConfig struct {
		AspectRatio string `json:"aspectRatio,omitempty"`
		ImageSize   string `json:"imageSize,omitempty"`
	}
	type generationConfig struct {
		ResponseModalities []string     `json:"responseModalities"`
		ImageConfig        *imageConfig `json:"imageConfig,omitempty"`
		CandidateCount     int          `json:"candidateCount,omitempty"`
	}
	parts := make([]google.Part, 0, len(job.inputs)+1)
	for _, u := range job.inputs {
		meta, data, _ := strings.Cut(strings.TrimPrefix(u, "data:"), ";base64,")
		parts = append(parts, google.Part{InlineData: &google.Blob{MimeType: meta, Data: data}})
	}
	parts = append(parts, google.Part{Text: job.prompt})
	gc := generationConfig{ResponseModalities: []string{"IMAGE"}, CandidateCount: job.n}
	if job.aspectRatio != "" || job.size != "" {
		gc.ImageConfig = &imageConfig{AspectRatio: job.aspectRatio, ImageSize: job.size}
	}
	out, err := json.Marshal(struct {
		Contents         []google.Content `json:"contents"`
		GenerationConfig generationConfig `json:"generationConfig"`
	}{[]google.Content{{Role: "user", Parts: parts}}, gc})
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
			Content google.Content `json:"content"`
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
