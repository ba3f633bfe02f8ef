package a2aagent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Where an agent publishes its card: the current path first, then the one
// agents of protocol 0.2 and early 0.3 used.
const (
	cardPath    = "/.well-known/agent-card.json"
	oldCardPath = "/.well-known/agent.json"
)

// endpoint is what the card tells the client: where to send JSON-RPC, in
// which dialect, and whether the agent streams task updates.
type endpoint struct {
	URL       string
	Dialect   dialect
	Streaming bool
}

// card is the part of an agent card this client reads, in both shapes: 1.0
// lists its interfaces in supportedInterfaces, 0.3 has one url with its
// preferredTransport and more in additionalInterfaces.
type card struct {
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	ProtocolVersion      string `json:"protocolVersion"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
}

// parseCard reads an agent card published under base and picks the
// JSON-RPC interface to speak to: a 1.0 one when the card offers one, else
// a 0.3 one. A card that names no interface URL means base itself.
func parseCard(base string, b []byte) (endpoint, error) {
	var c card
	if err := json.Unmarshal(b, &c); err != nil {
		return endpoint{}, err
	}
	ep := endpoint{Streaming: c.Capabilities.Streaming}
	if len(c.SupportedInterfaces) > 0 {
		var old string
		found, foundOld := false, false
		for _, in := range c.SupportedInterfaces {
			if !strings.EqualFold(in.ProtocolBinding, "JSONRPC") {
				continue
			}
			switch major(in.ProtocolVersion) {
			case "1":
				if !found {
					ep.URL, ep.Dialect, found = in.URL, v10, true
				}
			case "0":
				if !foundOld {
					old, foundOld = in.URL, true
				}
			}
		}
		switch {
		case found:
		case foundOld:
			ep.URL, ep.Dialect = old, v03
		default:
			return endpoint{}, errString("no JSON-RPC interface of protocol 1.0 or 0.3 in supportedInterfaces")
		}
		return resolve(base, ep)
	}
	// The 0.3 shape.
	if v := major(c.ProtocolVersion); v != "0" && v != "" {
		return endpoint{}, errString("protocol version " + quote(c.ProtocolVersion) + " is neither 1.0 nor 0.3")
	}
	ep.Dialect = v03
	if c.PreferredTransport == "" || strings.EqualFold(c.PreferredTransport, "JSONRPC") {
		ep.URL = c.URL
		return resolve(base, ep)
	}
	for _, in := range c.AdditionalInterfaces {
		if strings.EqualFold(in.Transport, "JSONRPC") {
			ep.URL = in.URL
			return resolve(base, ep)
		}
	}
	return endpoint{}, errString("no JSON-RPC interface (preferred transport " + quote(c.PreferredTransport) + ")")
}

// major is a version's major number ("0.3.0" gives "0").
func major(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	m, _, _ := strings.Cut(v, ".")
	return m
}

// resolve makes the interface URL absolute against the agent's URL.
func resolve(base string, ep endpoint) (endpoint, error) {
	if ep.URL == "" {
		ep.URL = base
		return ep, nil
	}
	b, err := url.Parse(base)
	if err != nil {
		return endpoint{}, err
	}
	u, err := b.Parse(ep.URL)
	if err != nil {
		return endpoint{}, errString("interface url " + quote(ep.URL) + ": " + err.Error())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, errString("interface url " + quote(ep.URL) + " is not an http or https URL")
	}
	ep.URL = u.String()
	return ep, nil
}

// endpoint returns the agent's endpoint from its card, read again when
// the copy is older than the card TTL. One caller reads it at a time; the
// others wait for that read (or their ctx).
func (a *Agent) endpoint(ctx context.Context) (endpoint, error) {
	select {
	case a.cardLock <- struct{}{}:
	case <-ctx.Done():
		return endpoint{}, ctx.Err()
	}
	defer func() { <-a.cardLock }()
	now := a.now()
	if a.cardAt != (time.Time{}) && now.Sub(a.cardAt) < a.cardTTL && now.Sub(a.cardAt) >= 0 {
		return a.ep, nil
	}
	ep, err := a.fetchCard(ctx)
	if err != nil {
		return endpoint{}, err
	}
	a.ep, a.cardAt = ep, now
	return ep, nil
}

// fetchCard reads the card at the current path, then at the older one
// when the current one is not found.
func (a *Agent) fetchCard(ctx context.Context) (endpoint, error) {
	var body []byte
	var err error
	for _, path := range []string{cardPath, oldCardPath} {
		body, err = a.get(ctx, a.url+path)
		var se *StatusError
		if err == nil || !asStatus(err, &se) || se.Status != http.StatusNotFound {
			break
		}
	}
	var se *StatusError
	if asStatus(err, &se) && se.Status == http.StatusNotFound {
		return endpoint{}, &CardError{URL: a.url, Reason: "not found at " + cardPath + " nor at " + oldCardPath}
	}
	if err != nil {
		return endpoint{}, err
	}
	ep, err := parseCard(a.url, body)
	if err != nil {
		return endpoint{}, &CardError{URL: a.url, Reason: err.Error()}
	}
	a.log.Debug("a2aagent: agent card read")
	return ep, nil
}
