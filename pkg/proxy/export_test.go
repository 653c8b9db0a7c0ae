package proxy

import "github.com/ompgo/omp/pkg/llm"

// SetCatalog replaces the model catalog (tests add an OpenAI Chat
// Completions model, which the bundled catalog does not have).
func SetCatalog(s *Server, c *llm.Catalog) { s.models = &models{catalog: c} }
