// Package google is the Google Gemini adapter of the provider layer: an
// upstream llm.Provider for the Gemini Developer API (API key,
// generativelanguage.googleapis.com) and one for the Cloud Code Assist
// endpoint used by Gemini-CLI and Antigravity OAuth credentials.
//
// Both share the request translation (canonical Request → generateContent
// body, tool schemas cleaned for Google) and the stream decoder
// (streamGenerateContent SSE chunks → canonical events). Code Assist wraps
// the request as {model, project, request} and each response chunk as
// {response: …}.
//
// The inbound half (inbound.go, inbound_fast.go, inbound_encode.go) is the
// Gemini API as a client of the gateway speaks it: DecodeRequest turns a
// generateContent body into the canonical request, StreamEncoder and
// AppendResponse render the canonical events as GenerateContentResponse
// objects.
package google
