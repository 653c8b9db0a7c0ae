package proxy

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// apiVideo is the wire API of the video models (OpenRouter's).
const apiVideo = "openrouter-video"

// videoFields are the members of a video request passed on upstream
// besides the model.
var videoFields = []string{
	"prompt", "duration", "resolution", "aspect_ratio", "size", "frame_images", "input_references", "generate_audio",
	"seed", "callback_url", "provider", "previous_job_id", "session_id", "trace", "user", "creativity", "upscale_factor",
}

// Allowed values of two video request members.
var (
	videoResolutions  = []string{"360p", "480p", "720p", "768p", "1080p", "1K", "2K", "4K"}
	videoAspectRatios = []string{"16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9", "9:21"}
)

// videoJob is what a video id encodes: the gateway keeps no state, so the
// id carries the provider, the model and the upstream job id
// (base64url of this JSON, unpadded).
type videoJob struct {
	Provider   string `json:"provider"`
	ModelID    string `json:"modelId"`
	UpstreamID string `json:"upstreamId"`
}

func (j videoJob) id() string {
	b, _ := json.Marshal(j)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseVideoID(id string) (videoJob, error) {
	var j videoJob
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || json.Unmarshal(b, &j) != nil || j.Provider == "" || j.ModelID == "" || j.UpstreamID == "" {
		return j, errorf(http.StatusBadRequest, "videos: invalid video job id")
	}
	return j, nil
}

// videoStatus is the upstream's job object.
type videoStatus struct {
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	GenerationID *string  `json:"generation_id"`
	UnsignedURLs []string `json:"unsigned_urls"`
	Error        *string  `json:"error"`
	Usage        *struct {
		Cost *float64 `json:"cost"`
	} `json:"usage"`
}

// videoAnswer is the job object the gateway answers: its own id and URLs.
type videoAnswer struct {
	ID           string     `json:"id"`
	Status       string     `json:"status"`
	PollingURL   string     `json:"polling_url"`
	GenerationID *string    `json:"generation_id,omitempty"`
	UnsignedURLs []string   `json:"unsigned_urls,omitempty"`
	Error        *string    `json:"error,omitempty"`
	Usage        *videoCost `json:"usage,omitempty"`
}

type videoCost struct {
	Cost float64 `json:"cost"`
}

// videoSubmit answers POST /v1/videos: the job is submitted upstream and
// answered 202 with a stateless id.
func (s *Server) videoSubmit(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "video-submit")
	if err := requireJSON(r); err != nil {
		return err
	}
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBody(w, r, c)
	if err != nil {
		return err
	}
	up, model, err := decodeVideo(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, model, []string{apiVideo}, notVideo); err != nil {
		return err
	}
	up["model"], _ = json.Marshal(m.model.WireID())
	out, err := json.Marshal(up)
	if err != nil {
		return err
	}
	c.recycle()
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		req := jsonRequest(s.mediaURL(m, "/videos"), out)
		req.Accept = "application/json"
		return req, nil
	})
	if err != nil {
		return err
	}
	var st videoStatus
	if err := readMediaAnswer(resp, &st); err != nil {
		return err
	}
	if st.ID == "" {
		return &apiError{Status: http.StatusBadGateway, Message: m.model.Provider + "/" + m.model.ID + " video response is malformed: id is missing"}
	}
	job := videoJob{Provider: m.model.Provider, ModelID: m.model.ID, UpstreamID: st.ID}
	return s.writeVideo(w, r, m, http.StatusAccepted, job, st)
}

// videoPoll answers GET /v1/videos/{id} with the job's state.
func (s *Server) videoPoll(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "video-poll")
	job, err := s.videoJobOf(r, m)
	if err != nil {
		return err
	}
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return openai.MediaRequest{Method: http.MethodGet, URL: s.mediaURL(m, "/videos/"+url.PathEscape(job.UpstreamID)), Accept: "application/json"}, nil
	})
	if err != nil {
		return err
	}
	var st videoStatus
	if err := readMediaAnswer(resp, &st); err != nil {
		return err
	}
	if st.Status == "completed" && st.Usage != nil && st.Usage.Cost != nil {
		s.observeMedia(r, m, llm.Usage{Cost: llm.Cost{Total: *st.Usage.Cost}})
	}
	return s.writeVideo(w, r, m, http.StatusOK, job, st)
}

// videoContent answers GET /v1/videos/{id}/content with the video's
// bytes, passed on as they arrive.
func (s *Server) videoContent(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "video-content")
	job, err := s.videoJobOf(r, m)
	if err != nil {
		return err
	}
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return openai.MediaRequest{Method: http.MethodGet, URL: s.mediaURL(m, "/videos/"+url.PathEscape(job.UpstreamID)+"/content"), Accept: "video/*"}, nil
	})
	if err != nil {
		return err
	}
	s.passBytes(w, r, m, resp, "application/octet-stream")
	return nil
}

// videoJobOf decodes the route's video id and resolves its model.
func (s *Server) videoJobOf(r *http.Request, m *media) (videoJob, error) {
	job, err := parseVideoID(chi.URLParam(r, "id"))
	if err != nil {
		return job, err
	}
	return job, s.resolveMedia(r, m, job.Provider+"/"+job.ModelID, []string{apiVideo}, notVideo)
}

// writeVideo answers a job object under the gateway's id and URLs.
func (s *Server) writeVideo(w http.ResponseWriter, r *http.Request, m *media, status int, job videoJob, st videoStatus) error {
	id := job.id()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	polling := scheme + "://" + r.Host + "/v1/videos/" + url.PathEscape(id)
	v := videoAnswer{ID: id, Status: st.Status, PollingURL: polling, GenerationID: st.GenerationID, Error: st.Error}
	for range st.UnsignedURLs {
		v.UnsignedURLs = append(v.UnsignedURLs, polling+"/content")
	}
	if st.Usage != nil && st.Usage.Cost != nil {
		v.Usage = &videoCost{*st.Usage.Cost}
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mediaHeaders(w, m)
	h := w.Header()
	h["Content-Type"] = mediaJSONType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}

// notVideo is the 400 text of a model that does not make videos.
func notVideo(id string, _ *llm.Model) string {
	return "Model " + id + " does not support video generation"
}

// decodeVideo validates a video request and returns the members passed
// on and the model id.
func decodeVideo(body []byte) (map[string]json.RawMessage, string, error) {
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "videos: "+msg) }
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, "", errorf(http.StatusBadRequest, "Invalid JSON body")
	}
	var model string
	if json.Unmarshal(in["model"], &model) != nil || model == "" {
		return nil, "", bad("model must be a non-empty string")
	}
	out := map[string]json.RawMessage{}
	for _, k := range videoFields {
		if v, ok := in[k]; ok && isSet(v) {
			out[k] = v
		}
	}
	oneOf := func(name string, allowed []string) error {
		raw, ok := out[name]
		if !ok {
			return nil
		}
		var v string
		if json.Unmarshal(raw, &v) != nil || !slices.Contains(allowed, v) {
			return bad(name + " must be one of " + joinQuoted(allowed))
		}
		return nil
	}
	if err := oneOf("resolution", videoResolutions); err != nil {
		return nil, "", err
	}
	if err := oneOf("aspect_ratio", videoAspectRatios); err != nil {
		return nil, "", err
	}
	return out, model, nil
}

// joinQuoted lists values as "a", "b", "c".
func joinQuoted(values []string) string {
	out := ""
	for i, v := range values {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(v)
	}
	return out
}
