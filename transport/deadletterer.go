package transport

import "context"

// DeadLetterer is implemented by a transport that can take a message its
// sender gives up on straight into its dead-letter queue (the in-memory bus
// and natsbus do). A decorator that keeps a message back while it waits,
// such as sender retries offering work to a full mailbox, hands it over
// this way at the end, so that the message is counted accepted and
// dead-lettered with the decorator's reason: the transport's accounting
// still adds up, and its OnDeadLetter callbacks see the letter.
type DeadLetterer interface {
	// DeadLetterWork validates m, fills what the transport owns (as
	// SendWork does), and dead-letters it with reason, the number of
	// attempts made and the text of the last error. An invalid message is
	// refused as SendWork refuses it, and is neither accepted nor
	// dead-lettered.
	DeadLetterWork(ctx context.Context, m *Message, reason DeadLetterReason, attempts int, lastErr string) error
}
