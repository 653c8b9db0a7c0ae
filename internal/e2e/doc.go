// Package e2e holds the end-to-end tests of the whole credential path: the
// real broker wiring (internal/brokerd.Main) with a fake OAuth token
// endpoint, the real gateway wiring (internal/gatewayd.Main) following it,
// and a fake Anthropic API reproducing the recorded wire shapes
// (pkg/llm/anthropic/testdata), driven by the official OpenAI and Anthropic
// Go SDKs. It has no non-test code.
package e2e
