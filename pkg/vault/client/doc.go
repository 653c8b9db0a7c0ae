// Package client is the auth broker's Go client, over the wire types of
// pkg/vault/api.
//
// Client implements the reference AuthBrokerClient: headers,
// timeouts, one retry on network errors, and the exact error messages. It
// reads leniently: unknown fields are ignored (e.g. a newer broker's
// `blocks`), required fields and their types are checked. Errors are *Error;
// for HTTP errors they wrap a *vault.Error rebuilt from the response (code
// from the status, message from the broker's {"error": …}), so callers can
// use errors.As and vault.ErrorCode across the wire.
package client
