package server

import "testing"

func TestExactJSONString(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`"order-7"`, true},
		{`"\ud83d\ude00"`, true},
		{`"\uD83D\uDE00"`, true},
		{`"\ufffd"`, true},
		{"\"\uFFFD\"", true},
		{`"\\ud800"`, true},   // a backslash, then the text ud800
		{`"\\\ud800"`, false}, // a backslash, then a lone surrogate
		{`"\"\ud800"`, false},
		{`"\ud800"`, false},
		{`"\udfff"`, false},
		{`"\ud800\ud800"`, false},
		{`"\ud800\n"`, false},
		{`"\ud800x"`, false},
		{"\"a\xffb\"", false},
		{"\"a\xc3\"", false},
	} {
		if got := exactJSONString([]byte(tc.raw)); got != tc.want {
			t.Errorf("exactJSONString(%s) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
