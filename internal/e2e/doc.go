// Package e2e holds the end-to-end tests of the whole credential path: the
// real broker wiring (internal/broker.Main) with a fake OAuth token
// endpoint, the real gateway wiring (internal/gateway.Main) following it,
// and fake upstream APIs (one httptest type parametrised by wire: Anthropic
// Messages, OpenAI Responses, ChatGPT-Codex, Gemini, Gemini CLI Code
// Assist) replaying the recorded streams of pkg/llm/*/testdata, driven by
// the official OpenAI and Anthropic Go SDKs. The OpenAI Chat Completions
// wire is not covered: the bundled catalog has no model on it and the
// gateway reads no models.yml. It has no non-test code.
package e2e
