// Package webview is the operators' web view of Baton: the instances with
// filters and live updates, one instance with its diagram, step timeline,
// context and outbox, the dead letters, and the workflows with their
// versions, source and diagram; a waiting instance can be signalled, a
// running one handed to a selectable agent or cancelled.
//
// It is an http.Handler built with html/template, htmx, server-sent events
// and Mermaid. The browser libraries are vendored from npm (package.json
// and package-lock.json beside this file), copied by go generate into
// static/ and embedded: nothing is built at run time, and every page and
// link works without script for its content; script adds the live updates
// and draws the diagrams.
//
// The view reads and acts through a Backend. `wfrun serve` (package server)
// provides one on its engines and store; a Go program running its own
// engines builds a Local on its store and engines. Everything a page shows
// from an instance, a workflow or a dead letter is escaped by html/template,
// and diagram labels by fsm.Mermaid.
package webview
