// Package config resolves everything a broker, gateway or client process
// reads from its surroundings: the config and agent directories, the
// merged environment (process environment plus the .env files),
// config.yml settings, config-value resolution (literal, environment
// variable name, $NAME, or !command), the broker URL and bearer token, token
// files, bind addresses, the snapshot-cache TTL, per-provider URL overrides
// and the per-provider API-key environment variables.
//
// Nothing here reads global state implicitly: callers pass the process
// environment, the working directory and a logger, so tests use temp dirs.
package config
