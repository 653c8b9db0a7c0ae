// Package conformance holds the cross-format conformance suite of the
// provider layer. Its tests play the gateway's
// pipeline without the gateway: an inbound body (Chat Completions,
// Messages, Responses or pi-native) is decoded to the canonical request,
// sent through each upstream Provider to a scripted local server that
// answers in that upstream's documented wire shape, and the canonical
// events are encoded back to the inbound format, streaming and not.
//
// The outputs are compared with goldens under testdata/ (regenerate with
// `go test ./pkg/llm/conformance -update`) and checked against the
// rules the official SDKs enforce on each format, so a golden is never just a
// snapshot. The package has no non-test code besides this comment.
package conformance
