// Package cliproxy decodes CLIProxyAPI auth files (one JSON object per file,
// default directory ~/.cli-proxy-api) into vault credentials for
// `omp auth-broker import`.
//
// For every file the reference importer accepts or skips, Parse produces the
// same provider, credential fields and skip reason. As a documented superset
// it also reads the CLIProxyAPI
// expiry aliases and numeric epochs, tokens nested under "token"/"Token"
// (legacy Gemini CLI files) and project_id.
package cliproxy
