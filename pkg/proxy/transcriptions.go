package proxy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// transcriptionLimit is the largest transcription request body (25 MiB).
const transcriptionLimit = 25 << 20

// msgTranscriptionTooLarge is its 413 text.
const msgTranscriptionTooLarge = "Request payload exceeds the 25 MB limit"

// maxFormField bounds one non-file multipart field.
const maxFormField = 64 << 10

// transcription is a parsed transcription request. The audio is spooled
// to a temporary file rather than held in memory: the credential ladder
// may send it more than once, and an upload is up to 25 MiB.
type transcription struct {
	model       string
	fields      [][2]string // the other form fields, in order, sent on as they came
	audio       *os.File
	size        int64
	fileName    string
	contentType string
}

// close removes the spooled audio.
func (t *transcription) close() {
	if t.audio != nil {
		_ = t.audio.Close()
		_ = os.Remove(t.audio.Name())
	}
}

// transcriptionField reports whether a form field is passed on upstream.
func transcriptionField(name string) bool {
	switch name {
	case "language", "prompt", "temperature", "response_format", "timestamp_granularities[]", "timestamp_granularities":
		return true
	}
	return false
}

// transcriptions answers POST /v1/audio/transcriptions (OpenAI
// transcription wire): a multipart upload with a file part, or JSON with
// input_audio {data (base64), format}.
func (s *Server) transcriptions(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "transcriptions")
	if r.ContentLength > transcriptionLimit {
		return errorf(http.StatusRequestEntityTooLarge, msgTranscriptionTooLarge)
	}
	r.Body = http.MaxBytesReader(w, r.Body, transcriptionLimit)
	t, err := s.readTranscription(w, r)
	defer t.close()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Message: msgTranscriptionTooLarge, Err: err}
		}
		if r.Context().Err() != nil {
			return &apiError{Status: 499, Message: "client closed request", Err: err}
		}
		return err
	}
	if err := s.resolveMedia(r, m, t.model, []string{apiTranscriptions}, func(id string, _ *llm.Model) string {
		return "Model " + id + " does not support audio transcription"
	}); err != nil {
		return err
	}
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return t.upstream(s.mediaURL(m, "/audio/transcriptions"), m.model.WireID()), nil
	})
	if err != nil {
		return err
	}
	var ans transcriptionAnswer
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	u := llm.Usage{Input: ans.Usage.InputTokens, Output: ans.Usage.OutputTokens}.WithCost(m.model.Cost)
	s.observeMedia(r, m, u)
	ans.Usage.TotalTokens = ans.Usage.InputTokens + ans.Usage.OutputTokens
	ans.Usage.Cost = u.Cost.Total
	return s.writeMediaJSON(w, m, ans)
}

// transcriptionAnswer is the transcription answer: the upstream's JSON
// fields, with usage in tokens and dollars.
type transcriptionAnswer struct {
	Text     string          `json:"text"`
	Language string          `json:"language,omitempty"`
	Duration *float64        `json:"duration,omitempty"`
	Segments json.RawMessage `json:"segments,omitempty"`
	Words    json.RawMessage `json:"words,omitempty"`
	Usage    struct {
		InputTokens  int64    `json:"input_tokens"`
		OutputTokens int64    `json:"output_tokens"`
		TotalTokens  int64    `json:"total_tokens"`
		Cost         float64  `json:"cost"`
		Seconds      *float64 `json:"seconds,omitempty"`
	} `json:"usage"`
}

// readTranscription parses the request by its Content-Type.
func (s *Server) readTranscription(w http.ResponseWriter, r *http.Request) (*transcription, error) {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		return readTranscriptionForm(multipart.NewReader(r.Body, params["boundary"]))
	case "application/json":
		c := &call{inflight: s.inflight}
		defer c.recycle()
		body, err := s.readBodyLimit(w, r, c, transcriptionLimit)
		if err != nil {
			return &transcription{}, err
		}
		return readTranscriptionJSON(body)
	}
	return &transcription{}, errorf(http.StatusBadRequest, "Content-Type must be multipart/form-data or application/json")
}

// readTranscriptionForm reads a multipart upload part by part, the file
// straight to its spool file.
func readTranscriptionForm(mr *multipart.Reader) (*transcription, error) {
	t := &transcription{}
	invalid := func(err error) error {
		var tooBig *http.MaxBytesError
		var se *spoolError
		switch {
		case errors.As(err, &tooBig):
			return err
		case errors.As(err, &se):
			return se.problem()
		}
		return &apiError{Status: http.StatusBadRequest, Message: "Invalid multipart/form-data body", Err: err}
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, invalid(err)
		}
		name := p.FormName()
		switch {
		case name == "file" && t.audio == nil:
			if t.audio, err = os.CreateTemp("", "omp-transcription-*"); err != nil {
				return t, (&spoolError{err}).problem()
			}
			if t.size, err = io.Copy(spoolWriter{t.audio}, p); err != nil {
				return t, invalid(err)
			}
			t.fileName, t.contentType = p.FileName(), p.Header.Get("Content-Type")
		case name == "model" || transcriptionField(name):
			v, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
			if err != nil {
				return t, invalid(err)
			}
			if len(v) > maxFormField {
				return t, errorf(http.StatusBadRequest, name+" is too long")
			}
			if name == "model" {
				t.model = strings.TrimSpace(string(v))
			} else {
				t.fields = append(t.fields, [2]string{name, string(v)})
			}
		}
		_ = p.Close()
	}
	if t.audio == nil {
		return t, errorf(http.StatusBadRequest, "file must be an audio upload")
	}
	if t.model == "" {
		return t, errorf(http.StatusBadRequest, "model must be a non-empty string")
	}
	return t, nil
}

// audioType is the media type of an input_audio format, "" when unknown.
func audioType(format string) string {
	switch format {
	case "wav", "wave":
		return "audio/wav"
	case "mp3", "mpeg":
		return "audio/mpeg"
	case "m4a", "mp4":
		return "audio/mp4"
	case "ogg", "opus":
		return "audio/ogg"
	case "flac", "webm", "aac":
		return "audio/" + format
	}
	return ""
}

// readTranscriptionJSON reads the JSON form {model, input_audio:{data,
// format}, language?, prompt?, temperature?, response_format?,
// timestamp_granularities?}.
func readTranscriptionJSON(body []byte) (*transcription, error) {
	t := &transcription{}
	var req struct {
		Model      string `json:"model"`
		InputAudio *struct {
			Data   string `json:"data"`
			Format string `json:"format"`
		} `json:"input_audio"`
		Language               *string  `json:"language"`
		Prompt                 *string  `json:"prompt"`
		Temperature            *float64 `json:"temperature"`
		ResponseFormat         *string  `json:"response_format"`
		TimestampGranularities []string `json:"timestamp_granularities"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return t, errorf(http.StatusBadRequest, "Invalid JSON body")
	}
	switch {
	case req.Model == "":
		return t, errorf(http.StatusBadRequest, "transcriptions: model must be a non-empty string")
	case req.InputAudio == nil || req.InputAudio.Data == "" || req.InputAudio.Format == "":
		return t, errorf(http.StatusBadRequest, "transcriptions: input_audio must be {data, format} with non-empty strings")
	}
	audio, err := base64.StdEncoding.DecodeString(req.InputAudio.Data)
	if err != nil {
		return t, errorf(http.StatusBadRequest, "input_audio.data must be valid base64")
	}
	format := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(req.InputAudio.Format)), ".")
	if format == "" {
		return t, errorf(http.StatusBadRequest, "input_audio.format must not be empty")
	}
	t.model, t.fileName, t.contentType = req.Model, "audio."+format, audioType(format)
	if t.contentType == "" {
		t.contentType = "application/octet-stream"
	}
	add := func(name string, v *string) {
		if v != nil {
			t.fields = append(t.fields, [2]string{name, *v})
		}
	}
	add("language", req.Language)
	add("prompt", req.Prompt)
	add("response_format", req.ResponseFormat)
	if req.Temperature != nil {
		t.fields = append(t.fields, [2]string{"temperature", strconv.FormatFloat(*req.Temperature, 'f', -1, 64)})
	}
	for _, g := range req.TimestampGranularities {
		t.fields = append(t.fields, [2]string{"timestamp_granularities[]", g})
	}
	if t.audio, err = os.CreateTemp("", "omp-transcription-*"); err != nil {
		return t, (&spoolError{err}).problem()
	}
	n, err := t.audio.Write(audio)
	t.size = int64(n)
	if err != nil {
		return t, (&spoolError{err}).problem()
	}
	return t, nil
}

// spoolWriter writes the spool file, marking its failures as the
// gateway's (a full temporary directory) rather than the upload's.
type spoolWriter struct{ f *os.File }

func (w spoolWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &spoolError{err}
	}
	return n, err
}

// spoolError is a failure to write the spooled audio.
type spoolError struct{ err error }

func (e *spoolError) Error() string { return "spool upload: " + e.err.Error() }
func (e *spoolError) Unwrap() error { return e.err }

// problem is the 503 of a spool failure; the file system's message (with
// its path) is only logged.
func (e *spoolError) problem() error {
	return &apiError{Status: http.StatusServiceUnavailable, Message: "The gateway has no room to hold the upload; retry later", Err: e}
}

// upstream is the multipart request of one attempt: written through a
// pipe as the transport reads it, the audio read from the spool file.
func (t *transcription) upstream(url, model string) openai.MediaRequest {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(t.writeForm(mw, model))
	}()
	body := &pipeBody{PipeReader: pr, done: done}
	return openai.MediaRequest{URL: url, ContentType: mw.FormDataContentType(), Body: body, Length: -1}
}

// writeForm writes the multipart body: model, the other fields, the file.
func (t *transcription) writeForm(mw *multipart.Writer, model string) error {
	if err := mw.WriteField("model", model); err != nil {
		return err
	}
	for _, f := range t.fields {
		if f[0] == "response_format" && f[1] != "verbose_json" {
			// The answer is re-encoded from JSON: text, srt and vtt
			// are asked for as json.
			f[1] = "json"
		}
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	name := t.fileName
	if name == "" {
		name = "audio"
	}
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="file"; filename="` + escapeQuotes(name) + `"`}
	ct := t.contentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h["Content-Type"] = []string{ct}
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, io.NewSectionReader(t.audio, 0, t.size)); err != nil {
		return err
	}
	return mw.Close()
}

// escapeQuotes escapes a multipart file name as mime/multipart does.
func escapeQuotes(s string) string {
	return strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "").Replace(s)
}

// pipeBody is a request body written by a goroutine; Close stops the
// writer and waits for it.
type pipeBody struct {
	*io.PipeReader
	done chan struct{}
}

func (b *pipeBody) Close() error {
	err := b.PipeReader.Close()
	<-b.done
	return err
}
