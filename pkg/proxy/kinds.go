package proxy

import "github.com/ompgo/omp/pkg/llm"

// kindRoute is the route of a non-chat model kind, as the chat routes
// name it when such a model is sent there; "" for chat. (A switch, not a
// package-level map: nothing here runs at program start.)
func kindRoute(kind string) string {
	switch kind {
	case llm.KindJudge:
		return "POST /v1/systemone"
	case llm.KindImage:
		return "POST /v1/images/generations"
	case llm.KindTTS:
		return "POST /v1/audio/speech"
	case llm.KindSTT:
		return "POST /v1/audio/transcriptions"
	case llm.KindEmbedding:
		return "POST /v1/embeddings"
	case llm.KindRerank:
		return "POST /v1/rerank"
	case llm.KindVideo:
		return "POST /v1/videos"
	}
	return ""
}

// notChat is the 400 text for a non-chat model sent to a chat route, ""
// for a chat model.
func notChat(m *llm.Model) string {
	kind := m.ModelKind()
	route := kindRoute(kind)
	if route == "" {
		return ""
	}
	return "Model " + m.Provider + "/" + m.ID + " is a " + kind + " model; use " + route
}
