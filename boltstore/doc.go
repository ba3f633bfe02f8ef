// Package boltstore is a durable record.Store kept in one file with bbolt,
// an embedded, pure-Go key/value store with ACID transactions.
//
//	store, err := boltstore.Open("baton.db")
//	...
//	defer store.Close()
//	eng, err := engine.New(w, reg, engine.WithStore(store))
//
// # Guarantees
//
// Each Commit is one bbolt transaction: the instance's snapshot, the step's
// history entries and its outbox changes (the items it sends, the items it
// settles) are written together or not at all, and no reader ever sees part
// of a step. When Commit returns nil:
//
//   - by default the step has been written and fsynced: it survives the
//     process being killed and the machine losing power;
//   - with WithNoSync(true) the step has been handed to the operating
//     system: it survives the process being killed (SIGKILL included) but
//     not a power loss or a kernel crash, after which the file may even be
//     unreadable;
//   - with WithBatch the guarantees are the same; the commits of concurrent
//     instances merely share a transaction and an fsync. If one of them
//     fails, each is written again in a transaction of its own, so that only
//     the failing one fails.
//
// AddDeadLetter and SaveWorkflow are written the same way.
//
// When Commit returns an error, nothing of the step was written. A file
// that was killed mid-commit opens at its last committed transaction.
//
// # Layout
//
// A file holds six buckets:
//
//	meta         "format" -> "1"
//	instances    id -> the instance's last snapshot (JSON)
//	history      uvarint(len(id)) id seq -> one step's entries (a JSON array)
//	outbox       uvarint(len(id)) id key -> one unsettled outbox item (JSON)
//	deadletters  seq -> one dead letter (JSON)
//	workflows    hash -> one workflow source (JSON)
//
// seq is a big-endian counter shared by all instances, so an instance's
// records sort in commit order right after one another and History is a
// single range scan. The length prefix keeps an id from being read as the
// prefix of a longer one. An outbox item is kept under its own key, so that
// a commit replaces or settles it with one write; Outbox reads an instance's
// few items with one range scan and sorts them by step. Dead letters are
// numbered by the bucket's own big-endian counter, which is their Seq.
// Records are the engine types' own JSON, with every time in UTC to the
// nanosecond; numbers in Result, Input, Context and the outbox and dead
// letter maps read back as float64, as from any JSON source. (encoding/json
// costs about a fifth of a commit without fsync, and keeps the file readable
// with any bbolt tool.)
//
// The outbox, deadletters and workflows buckets came after the first three
// without a new format: Open adds them to a format "1" file that lacks them.
//
// # Damaged files
//
// A file that is not a bbolt database, or whose pages or records cannot be
// read, gives a *CorruptError (matching ErrCorrupt), never a panic: Open,
// Commit and every read turn a panic or a memory fault inside bbolt into
// that error. (A file bbolt panics on while opening stays locked by this
// process until it exits: bbolt gives back no handle to close.)
// A bbolt file that this package did not write gives a *FormatError and is
// not modified.
package boltstore
