// Package usage fetches provider usage reports for stored credentials
// (usage.md §2), caches them per credential with a jittered TTL and a
// last-good fallback (usage.md §3), records usage history (usage.md §6) and
// aggregates the reports of every credential into one deduplicated list
// (usage.md §4.1) for the broker's GET /v1/usage.
//
// Every upstream base URL is overridable through Service.URLs; probes never
// log tokens.
package usage
