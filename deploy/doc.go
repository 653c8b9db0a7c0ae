// Package deploy holds the deployment files (systemd units, Kubernetes
// manifests, compose file, image builder inputs) and the tests that
// validate them; it has no code of its own.
package deploy
