// Package pick chooses the credential a request uses: the
// selection shared by the gateway, over the broker's snapshot
// (pkg/vault/remote), and the agent or broker host, over its own vault
// (vault.LocalSource). It reads credentials only through a vault.Source.
//
// Selection is deterministic: with a session id the starting candidate is
// xxHash32(sessionId) mod n and the weighted pick among ranked OAuth accounts
// uses xxHash32(sessionId)/2^32, so N gateway replicas that see the same
// snapshot and the same usage keep one session on one account without
// sharing any state. What is not shared — round-robin cursors, sticky
// credentials and blocks — lives in memory in a Picker and is cleared for a
// provider whenever that provider's credential set changes.
//
// Account policies (Policies: a routing priority and a usage reserve per
// OAuth account) take part in the OAuth ranking; they depend only on the
// snapshot, the usage reports and the configuration, so replicas with the
// same configuration still agree.
//
// Blocks are keyed by credential id, not by position (the reference keys
// its in-memory map by candidate index); see Blocks. Shared, broker-side
// blocks are keyed by credential id and scope too; the Picker takes the
// later of the two.
//
// Deviations from the reference, each for a reason given where it is coded:
// only the candidate about to be returned is prepared (refreshed near
// expiry), not every candidate in parallel; every refresh failure seen
// through a Source blocks 5 min (a definitive one disables the row at the
// broker, and the set change follows); a provider's lone usage report is
// not handed to an account it does not name.
//
// The Ladder helper implements the gateway's credential retry ladder.
package pick
