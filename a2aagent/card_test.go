package a2aagent

import "testing"

func TestParseCard_BothShapes(t *testing.T) {
	const base = "http://agent.test/base"
	for _, tc := range []struct {
		name, card string
		want       endpoint
	}{
		{"1.0", `{"supportedInterfaces":[{"url":"http://agent.test/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true}}`,
			endpoint{URL: "http://agent.test/rpc", Dialect: v10, Streaming: true}},
		{"1.0PreferredOverAnEarlier0.3", `{"supportedInterfaces":[{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://a/new","protocolBinding":"jsonrpc","protocolVersion":"1.0"}]}`,
			endpoint{URL: "http://a/new", Dialect: v10}},
		{"only0.3InSupportedInterfaces", `{"supportedInterfaces":[{"url":"http://a/grpc","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			endpoint{URL: "http://a/old", Dialect: v03}},
		{"relativeURL", `{"supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			endpoint{URL: "http://agent.test/rpc", Dialect: v10}},
		{"0.3", `{"url":"http://a/rpc","protocolVersion":"0.3.0","preferredTransport":"JSONRPC"}`,
			endpoint{URL: "http://a/rpc", Dialect: v03}},
		{"0.3NoTransportSaid", `{"url":"http://a/rpc","capabilities":{"streaming":true}}`,
			endpoint{URL: "http://a/rpc", Dialect: v03, Streaming: true}},
		{"0.3AdditionalInterface", `{"url":"http://a/grpc","protocolVersion":"0.3.0","preferredTransport":"GRPC","additionalInterfaces":[{"url":"http://a/json","transport":"JSONRPC"}]}`,
			endpoint{URL: "http://a/json", Dialect: v03}},
		{"noURLMeansTheBase", `{"name":"x"}`, endpoint{URL: base, Dialect: v03}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCard(base, []byte(tc.card))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseCard_Refuses(t *testing.T) {
	for _, card := range []string{
		``, `[]`, `{"supportedInterfaces":"x"}`,
		`{"supportedInterfaces":[{"url":"http://a","protocolBinding":"JSONRPC","protocolVersion":"2.0"}]}`,
		`{"supportedInterfaces":[{"url":"ftp://a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		`{"url":"http://a","protocolVersion":"2.0"}`,
		`{"url":"http://a","preferredTransport":"GRPC"}`,
		`{"url":"http://a:bad port/x"}`,
	} {
		if ep, err := parseCard("http://agent.test", []byte(card)); err == nil {
			t.Errorf("parseCard(%s): got %+v, want an error", card, ep)
		}
	}
}

func TestNormalState_BothSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"TASK_STATE_COMPLETED": "completed", "completed": "completed",
		"TASK_STATE_INPUT_REQUIRED": "input-required", "input-required": "input-required",
		"TASK_STATE_AUTH_REQUIRED": "auth-required", "auth-required": "auth-required",
		"TASK_STATE_CANCELED": "canceled", "canceled": "canceled", "cancelled": "canceled",
		"TASK_STATE_REJECTED": "rejected", "TASK_STATE_SUBMITTED": "submitted", "working": "working",
		"TASK_STATE_FAILED": "failed", "TASK_STATE_UNSPECIFIED": "", "unknown": "", "": "",
	} {
		if got := normalState(in); got != want {
			t.Errorf("normalState(%q): got %q, want %q", in, got, want)
		}
	}
}
