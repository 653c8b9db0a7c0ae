// Package e2ebrowser holds the headless-browser test of the usage page
// (GET /usage): a real broker seeded with fake provider usage, the page
// driven in Debian's chromium through the DevTools protocol (chromedp).
// The test carries the build tag "browser" so `make test` never needs a
// browser; `make e2e-browser` installs chromium when missing and runs it.
package e2ebrowser
