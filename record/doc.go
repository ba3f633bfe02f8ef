// Package record holds what the engine writes down about its instances: the
// snapshot of an instance after a step, the history entries a step adds, the
// transactional outbox of work a step sends, dead letters and the sources of
// workflow versions, and the Store interface every store implements.
//
// It depends on nothing of the runtime, so that stores (bbolt, NATS) and
// tools that read histories (replay, wfrun inspect) import the records
// without the engine. MemStore is the in-memory Store; the conformance suite
// every Store passes is in record/storetest.
package record
