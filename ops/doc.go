// Package ops is the one operations layer of Baton: starting, reading,
// listing, signalling, selecting, cancelling instances, their histories,
// the dead letters and the workflows served, implemented once over a
// store and the engines that run each workflow version.
//
// Every front door (the HTTP API, the web view, and any other protocol a
// server speaks) is a thin layer over an *Ops: it decodes a request, calls
// one method and turns the typed error it returns into its own answer. The
// errors are *Error values whose Kind is one of the sentinels (ErrNotFound,
// ErrInvalid, ErrConflict, ErrUnavailable, ErrTooLarge), matched with
// errors.Is, and whose Code and Field say more; ops never speaks of HTTP
// statuses.
//
// An Ops finds the engine of a workflow version through a Catalog (a
// server's, or Engines for a Go program's own engines), and, on several
// processes sharing instances (a cluster of servers), sends an operation
// on an instance to the process that runs it through a Router. The
// engines' events reach the front doors through one Hub: the process
// publishes each engine event (EventOf) and the front doors Subscribe or
// Watch.
package ops
