package llmagent

import (
	"fmt"
	"io"
	"net/http"
)

// limitBodies bounds the answers the next transport reads: a server that
// answers without end must not hold the process's memory.
type limitBodies struct{ next http.RoundTripper }

func (l limitBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	next := l.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{body: resp.Body, left: MaxBody}
	}
	return resp, err
}

// limitedBody fails the read that goes past its limit.
type limitedBody struct {
	body io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the limit: the answer may end here, or go on.
		var probe [1]byte
		if n, err := b.body.Read(probe[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("llmagent: the answer is larger than %d bytes", MaxBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
