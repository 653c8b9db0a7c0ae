// Package usage fetches provider usage reports for stored credentials,
// caches them per credential with a jittered TTL and a
// last-good fallback, records usage history and
// aggregates the reports of every credential into one deduplicated list
// for the broker's GET /v1/usage.
//
// Every upstream base URL is overridable through Service.URLs; probes never
// log tokens.
package usage
