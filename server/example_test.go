package server_test

import (
	"context"
	"log"
	"net/http"

	"github.com/batonhq/baton/server"
)

// A Go program can build the server and mount its API itself, beside its
// own routes; Run does the same and also listens and shuts down.
func ExampleNew() {
	ctx := context.Background()
	s, err := server.New(ctx, server.Config{WorkflowsDir: "workflows", DataDir: "baton-data"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
