package llm

// The bundled catalogue is catalog.json; the binaries carry it as Go,
// catalog_gen.go, written from the JSON by go generate. After editing or
// refreshing catalog.json (scripts/gencatalog.go merges the reference
// pi-catalog's models.json into it), regenerate:
//
//	go generate ./pkg/llm

//go:generate go run ./internal/gencatalog
