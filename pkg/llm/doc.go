// Package llm is the provider-neutral domain of the model layer: the
// canonical Request, Message and content blocks, the canonical event stream
// (wire-formats.md §1), Usage, StopReason, the Model catalog, the upstream
// error vocabulary and the Provider interface.
//
// Adapters (pkg/llm/anthropic, pkg/llm/openai, pkg/llm/google) translate
// between these types and a provider's wire format, in both directions:
// as an upstream Provider and as an inbound codec for the gateway.
//
// The package imports only the standard library and never net/http.
package llm
