package proxy

import "github.com/ompgo/omp/pkg/llm"

// kindRoutes are the routes of the non-chat model kinds, as the chat
// routes name them when such a model is sent there.
var kindRoutes = map[string]string{
	llm.KindJudge:     "POST /v1/systemone",
	llm.KindImage:     "POST /v1/images/generations",
	llm.KindTTS:       "POST /v1/audio/speech",
	llm.KindSTT:       "POST /v1/audio/transcriptions",
	llm.KindEmbedding: "POST /v1/embeddings",
	llm.KindRerank:    "POST /v1/rerank",
	llm.KindVideo:     "POST /v1/videos",
}

// notChat is the 400 text for a non-chat model sent to a chat route, ""
// for a chat model.
func notChat(m *llm.Model) string {
	kind := m.ModelKind()
	route, ok := kindRoutes[kind]
	if !ok {
		return ""
	}
	return "Model " + m.Provider + "/" + m.ID + " is a " + kind + " model; use " + route
}
