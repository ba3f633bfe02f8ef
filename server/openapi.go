package server

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openapi is the API's OpenAPI 3.1 document.
//
//go:embed openapi.json
var openapi []byte

// OpenAPI returns the API's OpenAPI 3.1 document.
func OpenAPI() []byte { return append([]byte(nil), openapi...) }

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(openapi)))
	_, _ = w.Write(openapi)
}
