package proxy

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// speechRequest is the OpenAI speech request.
type speechRequest struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          *string  `json:"voice,omitempty"`
	ResponseFormat *string  `json:"response_format,omitempty"`
	Speed          *float64 `json:"speed,omitempty"`
	Instructions   *string  `json:"instructions,omitempty"`
}

// speechType is the media type of an audio format a speech request may
// ask for, "" for any other.
func speechType(format string) string {
	switch format {
	case "mp3":
		return "audio/mpeg"
	case "wav", "pcm", "opus", "aac", "flac":
		return "audio/" + format
	}
	return ""
}

// speech answers POST /v1/audio/speech (OpenAI speech wire) with the
// upstream's audio bytes, passed on as they arrive.
func (s *Server) speech(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "speech")
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBody(w, r, c)
	if err != nil {
		return err
	}
	req, err := decodeSpeech(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, req.Model, []string{apiSpeech, apiXAISpeech}, notSpeech); err != nil {
		return err
	}
	format := "mp3"
	if req.ResponseFormat != nil {
		format = *req.ResponseFormat
	}
	path, out, err := speechBody(m.model, req, format)
	if err != nil {
		return err
	}
	c.recycle()
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return jsonRequest(s.mediaURL(m, path), out), nil
	})
	if err != nil {
		return err
	}
	s.passBytes(w, r, m, resp, speechType(format))
	return nil
}

// apiXAISpeech is xAI's speech wire: POST /tts {text, voice_id,
// output_format}.
const apiXAISpeech = "xai-tts"

// xAI speech limits and defaults.
const (
	xaiMaxText = 15000
	xaiVoice   = "eve"
)

// speechBody is the upstream path and body of a speech request in format.
func speechBody(model *llm.Model, req *speechRequest, format string) (string, []byte, error) {
	if model.API != apiXAISpeech {
		up := *req
		up.Model, up.ResponseFormat = model.WireID(), &format
		b, err := json.Marshal(up)
		return "/audio/speech", b, err
	}
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "xai-tts "+msg) }
	switch {
	case len([]rune(req.Input)) > xaiMaxText:
		return "", nil, bad("input exceeds the " + strconv.Itoa(xaiMaxText) + "-character limit")
	case format != "mp3" && format != "wav":
		return "", nil, bad("does not support " + format + " output; use mp3 or wav")
	case req.Speed != nil:
		return "", nil, bad("does not support speed")
	case req.Instructions != nil:
		return "", nil, bad("does not support instructions")
	}
	type outputFormat struct {
		Codec      string `json:"codec"`
		SampleRate int    `json:"sample_rate"`
	}
	v := struct {
		Text         string        `json:"text"`
		VoiceID      string        `json:"voice_id"`
		OutputFormat *outputFormat `json:"output_format,omitempty"`
	}{Text: req.Input, VoiceID: xaiVoice}
	if req.Voice != nil {
		v.VoiceID = *req.Voice
	}
	if format != "mp3" {
		v.OutputFormat = &outputFormat{Codec: format, SampleRate: 24000}
	}
	b, err := json.Marshal(v)
	return "/tts", b, err
}

// notSpeech is the 400 text of a model that does not synthesize speech:
// it names the route of an image, transcription or judge model.
func notSpeech(id string, model *llm.Model) string {
	msg := "Model " + id + " does not synthesize speech"
	switch model.ModelKind() {
	case llm.KindImage, llm.KindSTT, llm.KindJudge:
		msg += "; use " + kindRoute(model.ModelKind())
	}
	return msg
}

// decodeSpeech validates a speech request.
func decodeSpeech(body []byte) (*speechRequest, error) {
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "speech: "+msg) }
	var req speechRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid JSON body: "+err.Error())
	}
	switch {
	case req.Model == "":
		return nil, bad("model must be a non-empty string")
	case req.Input == "":
		return nil, bad("input must be a non-empty string")
	case req.Voice != nil && *req.Voice == "":
		return nil, bad("voice must be a non-empty string")
	}
	if f := req.ResponseFormat; f != nil {
		if speechType(*f) == "" {
			return nil, bad(`response_format must be "mp3", "wav", "pcm", "opus", "aac" or "flac"`)
		}
	}
	return &req, nil
}

// passBytes answers 200 with the upstream's bytes as they arrive, under
// its Content-Type (else fallbackType) and Content-Length, and closes
// resp.Body.
func (s *Server) passBytes(w http.ResponseWriter, r *http.Request, m *media, resp *http.Response, fallbackType string) {
	defer resp.Body.Close()
	s.mediaHeaders(w, m)
	h := w.Header()
	h["Content-Type"] = []string{cmp.Or(resp.Header.Get("Content-Type"), fallbackType)}
	if resp.ContentLength >= 0 {
		h["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
	}
	w.WriteHeader(http.StatusOK)
	if err := copyFlushing(w, resp.Body); err != nil && r.Context().Err() == nil {
		s.log.Warn("auth-gateway "+m.format+" failed", "error", err)
		// The status is sent: cut the body short so the client sees it
		// incomplete rather than a shorter file.
		panic(http.ErrAbortHandler)
	}
}

// copyFlushing copies src to w, flushing after each read so that bytes
// reach the client as the upstream sends them and nothing is held whole.
func copyFlushing(w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
