package webview_test

import (
	"net/url"
	"testing"
)

// Any query of the instances and dead letters pages is answered with a
// page: 200, or 400 naming the field; never a panic or a 5xx.
func FuzzPagesQuery(f *testing.F) {
	for _, seed := range []string{
		"", "status=waiting", "version=0", "version=-1", "version=99999999999999999999",
		"since=2020-01-01T00:00&until=2020-01-01T00:00", "since=%zz", "limit=0", "limit=1&cursor=AAAA",
		"id=%00", "state=<script>", "fragment=rows&workflow=\"><img>", "reason=ttl_expired&cursor=-3",
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	fx.start("fuzz-1", map[string]any{"text": "x"})
	f.Fuzz(func(t *testing.T, query string) {
		fx := fx.in(t)
		for _, path := range []string{"?", "dead-letters?"} {
			if _, err := url.Parse(fx.base + path + query); err != nil {
				return // no browser sends it
			}
			code, body, _ := fx.get(path + query)
			if code >= 500 && code != 503 {
				t.Fatalf("%s%s: %d %s", path, query, code, body)
			}
		}
	})
}

// Any signal form is refused with a reason or sent; never a panic or a
// 5xx.
func FuzzSignalForm(f *testing.F) {
	for _, seed := range [][2]string{
		{"approve", ""}, {"approve", "{}"}, {"", "{}"}, {"nope", `{"a": 1}`}, {"approve", "[1]"},
		{"approve", `{"a": 1e400}`}, {"approve", "{} {}"}, {"approve", `{"\ud800": 1}`}, {"reject", "null"},
	} {
		f.Add(seed[0], seed[1])
	}
	fx := newFixture(f)
	fx.start("held", map[string]any{"mode": "hold"})
	f.Fuzz(func(t *testing.T, name, data string) {
		fx := fx.in(t)
		code, body, _ := fx.post("instances/held/signal", url.Values{"name": {name}, "data": {data}})
		if code >= 500 || code == 303 {
			t.Fatalf("signal %q %q: %d %s", name, data, code, body)
		}
	})
}
