// Package natsver checks that a NATS server is recent enough for the
// JetStream features Baton's client-side packages use. It is shared by the
// packages that talk to NATS so that each refuses an old server the same way,
// before it creates a stream, with a message that names the version needed.
package natsver
