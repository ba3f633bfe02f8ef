// Package bus is Baton's built-in message layer: the Message envelope of
// SPEC §4, per-agent mailboxes, topics, broadcast, request/response
// correlation, acknowledgements, retries, a dead-letter queue and metrics.
package bus
