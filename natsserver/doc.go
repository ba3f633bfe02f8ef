// Package natsserver runs an embedded NATS server with JetStream for Baton's
// single-binary mode and for tests.
//
// Start a server on a data directory and connect to it in-process (no
// socket at all):
//
//	srv, err := natsserver.Start(natsserver.Config{Dir: dir})
//	...
//	defer srv.Close()
//	nc, err := srv.Connect()
//
// Set Listen when another process must connect too: the server then also
// listens on a loopback port (a random one unless Port is set) and URL
// returns the address to give that process.
//
// By default the server writes every JetStream message to disk with an
// fsync before it acknowledges it; SyncInterval relaxes that. MaxStore caps
// the disk JetStream uses. A stream whose write failed (a full disk) fails
// every later write until JetStream is loaded again: the server watches for
// that (Healthy) and loads its streams again by itself once the disk takes
// writes again. This package
// imports nats-server: packages that only need a client (the NATS store and
// transport) do not import it.
package natsserver
